import Contracts

/// How a `KafkaProducer` talks to the cluster. Idempotence and `acks=all` are not options: every
/// producer has them, so a retried send never duplicates or reorders records within a partition.
public struct KafkaProducerConfiguration: Sendable {
    public enum Compression: String, Sendable, CaseIterable {
        case none, lz4, zstd
    }

    /// `host:port` list, comma-separated.
    public var bootstrapServers: String
    /// Names the client in broker logs, metrics and librdkafka's own log lines.
    public var clientID: String
    public var compression: Compression = .lz4
    /// How long a record may wait for others to fill a batch (`linger.ms`).
    public var linger: Duration = .milliseconds(5)
    /// Largest batch per partition, in bytes (`batch.size`).
    public var batchSize: Int = 1_000_000
    /// How long librdkafka keeps retrying a record before its delivery fails (`message.timeout.ms`).
    public var messageTimeout: Duration = .seconds(120)
    /// How long shutdown waits for records still in flight before failing them.
    public var flushTimeout: Duration = .seconds(5)
    /// How often librdkafka reports statistics (queue depth, broker round trips); `nil` for never.
    public var statisticsInterval: Duration? = .seconds(15)
    /// Further librdkafka properties, applied last (see librdkafka's CONFIGURATION.md).
    public var properties: [String: String] = [:]

    public init(bootstrapServers: String, clientID: String) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
    }

    var librdkafkaProperties: [String: String] {
        var properties: [String: String] = [
            "bootstrap.servers": bootstrapServers,
            "client.id": clientID,
            "enable.idempotence": "true",
            "acks": "all",
            "compression.codec": compression.rawValue,
            "linger.ms": "\(linger.wholeMilliseconds)",
            "batch.size": "\(batchSize)",
            "message.timeout.ms": "\(messageTimeout.wholeMilliseconds)",
            "queue.buffering.max.messages": "1000000",
            "statistics.interval.ms": "\(statisticsInterval?.wholeMilliseconds ?? 0)",
            "log.connection.close": "false",
            "socket.nagle.disable": "true",
        ]
        properties.merge(self.properties) { _, extra in extra }
        return properties
    }
}
