import CRdKafka
import Contracts
import Foundation
import Synchronization

/// A Kafka-protocol cluster inside this process: librdkafka's mock cluster, with real brokers
/// listening on loopback sockets that any Kafka client (kcat, librdkafka, the JVM client) can use.
///
/// `splash kafka` runs one as the local broker for `make run`; integration tests start one per test
/// process. State lives in memory and ends with the cluster. The mock broker does not implement the
/// CreateTopics admin request, so topics are created here, through its own API.
public final class KafkaEmbeddedCluster: Sendable {
    /// `host:port` of every broker, comma-separated: the `bootstrap.servers` of clients.
    public let bootstrapServers: String
    public let brokerCount: Int

    private struct Handles {
        var client: OpaquePointer
        var cluster: OpaquePointer
    }

    private let handles: Mutex<Handles?>

    /// Starts a cluster of `brokers` brokers and creates `topics` on it.
    /// - Throws: `KafkaError` when librdkafka cannot create the cluster or a topic.
    public init(brokers: Int = 3, topics: [Topic] = TopicCatalog.all) throws(KafkaError) {
        let config = try RDKafkaConfig([
            // The handle only hosts the mock cluster; it never talks to a broker itself.
            "log_level": "3"
        ])
        var errorText = ErrorText()
        guard let client = rd_kafka_new(RD_KAFKA_PRODUCER, config.release(), &errorText.buffer, errorText.buffer.count) else {
            throw KafkaError.clientCreation(reason: errorText.message)
        }
        guard let cluster = rd_kafka_mock_cluster_new(client, Int32(brokers)) else {
            rd_kafka_destroy(client)
            throw KafkaError.embeddedCluster(reason: "rd_kafka_mock_cluster_new failed")
        }
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        Self.disableNagle(onListenersOf: bootstrapServers)
        self.brokerCount = brokers
        self.handles = Mutex(Handles(client: client, cluster: cluster))
        for topic in topics {
            try createTopic(topic)
        }
    }

    deinit {
        shutdown()
    }

    /// Sets `TCP_NODELAY` on the brokers' listening sockets, which connections they accept
    /// inherit, as a real Kafka broker does for its connections. Without it, a broker answering
    /// several pipelined requests holds each small response back until the client's delayed ACK
    /// (40 ms on Linux). librdkafka does not expose the sockets, so they are found among this
    /// process's descriptors by their listening port.
    private static func disableNagle(onListenersOf bootstrapServers: String) {
        let ports = Set(bootstrapServers.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { UInt16($0) } })
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for descriptor in descriptors.compactMap({ Int32($0) }) {
            var listening: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening != 0 else { continue }
            var address = sockaddr_in()
            var addressLength = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &addressLength) }
            }
            guard named == 0, address.sin_family == sa_family_t(AF_INET), ports.contains(UInt16(bigEndian: address.sin_port)) else { continue }
            var on: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Creates `topic` with its partition count, replicated on up to three brokers. Creating a
    /// topic that exists is not an error.
    public func createTopic(_ topic: Topic) throws(KafkaError) {
        let replication = Int32(min(3, brokerCount))
        let result: rd_kafka_resp_err_t? = handles.withLock { handles in
            guard let handles else { return nil }
            return rd_kafka_mock_topic_create(handles.cluster, topic.name, Int32(topic.partitions), replication)
        }
        guard let result else { throw KafkaError.embeddedCluster(reason: "the cluster is shut down") }
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR || result == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else {
            throw KafkaError.embeddedCluster(reason: "creating topic \(topic.name): \(String(cString: rd_kafka_err2str(result)))")
        }
    }

    /// Takes every broker down (`down: true`: connections are closed and new ones refused, as in
    /// an outage) or brings them back up.
    /// - Throws: `KafkaError.embeddedCluster` after shutdown.
    public func setAllBrokers(down: Bool) throws(KafkaError) {
        try forEachBroker { cluster, broker in
            if down {
                rd_kafka_mock_broker_set_down(cluster, broker)
            } else {
                rd_kafka_mock_broker_set_up(cluster, broker)
            }
        }
    }

    /// Delays every broker's responses by `roundTripTime` (zero: none). Requests are still handled
    /// on arrival, so a producer's records are on the log while it waits for their acknowledgements.
    /// - Throws: `KafkaError.embeddedCluster` after shutdown.
    public func setAllBrokers(roundTripTime: Duration) throws(KafkaError) {
        let milliseconds = Int32(roundTripTime.wholeMilliseconds)
        try forEachBroker { cluster, broker in
            _ = rd_kafka_mock_broker_set_rtt(cluster, broker, milliseconds)
        }
    }

    private func forEachBroker(_ body: (OpaquePointer, Int32) -> Void) throws(KafkaError) {
        let failed: Bool = handles.withLock { handles in
            guard let handles else { return true }
            for broker in 1...Int32(brokerCount) { body(handles.cluster, broker) }
            return false
        }
        if failed { throw KafkaError.embeddedCluster(reason: "the cluster is shut down") }
    }

    /// Stops the brokers and frees the cluster. Idempotent.
    public func shutdown() {
        let stopped = handles.withLock { handles -> Handles? in
            defer { handles = nil }
            return handles
        }
        guard let stopped else { return }
        rd_kafka_mock_cluster_destroy(stopped.cluster)
        rd_kafka_destroy(stopped.client)
    }
}
