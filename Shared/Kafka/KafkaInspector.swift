import CRdKafka
import Contracts
import Foundation
import Logging

/// Looks at topics and consumer groups without joining a group: what an operator's tools show
/// (`splash dlq`, the console). Each call opens a client of its own and closes it before returning;
/// the calls block a thread of their own, never one of Swift's cooperative ones.
public struct KafkaInspector: Sendable {
    /// One partition's offsets, and a group's position in it.
    public struct PartitionOffsets: Sendable, Hashable {
        public var topic: String
        public var partition: Int32
        /// The oldest offset the partition still holds.
        public var low: Int64
        /// The offset the next record will get.
        public var high: Int64
        /// The group's committed offset (the next record it will read); `nil` when it has committed
        /// nothing here.
        public var committed: Int64?

        /// Records the group has still to read: from its committed offset (or the oldest record,
        /// where a new group starts) to the end.
        public var lag: Int64 { max(0, high - max(low, committed ?? low)) }
    }

    public let bootstrapServers: String
    public let timeout: Duration
    let logger: Logger

    public init(bootstrapServers: String, timeout: Duration = .seconds(10), logger: Logger) {
        self.bootstrapServers = bootstrapServers
        self.timeout = timeout
        self.logger = logger
    }

    /// The offsets of every partition of `topics`, with `group`'s committed offsets when a group is
    /// named.
    /// - Throws: `KafkaError.unreachable` when the cluster does not answer within the timeout.
    public func offsets(of topics: [Topic], group: String? = nil) async throws(KafkaError) -> [PartitionOffsets] {
        let handle = try consumerHandle(group: group ?? "splash-inspector-\(UUID().uuidString.lowercased())")
        let milliseconds = Int32(clamping: timeout.wholeMilliseconds)
        let result: Result<[PartitionOffsets], KafkaError> = await RDKafkaHandle.blocking {
            var offsets: [PartitionOffsets] = []
            for topic in topics {
                for partition in 0..<Int32(topic.partitions) {
                    var low: Int64 = 0
                    var high: Int64 = 0
                    let error = rd_kafka_query_watermark_offsets(handle.pointer, topic.name, partition, &low, &high, milliseconds)
                    guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                        return .failure(.unreachable(reason: "\(topic.name)[\(partition)]: \(String(cString: rd_kafka_err2str(error)))"))
                    }
                    offsets.append(PartitionOffsets(topic: topic.name, partition: partition, low: low, high: high, committed: nil))
                }
            }
            guard group != nil else { return .success(offsets) }
            let list = RDKafkaPartitionList(offsets.map { ($0.topic, $0.partition, nil) })
            let error = rd_kafka_committed(handle.pointer, list.pointer, milliseconds)
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return .failure(.unreachable(reason: "committed offsets of \(group!): \(String(cString: rd_kafka_err2str(error)))"))
            }
            for index in 0..<Int(list.pointer.pointee.cnt) {
                let element = list.pointer.pointee.elems[index]
                if element.err == RD_KAFKA_RESP_ERR_NO_ERROR, element.offset >= 0 { offsets[index].committed = element.offset }
            }
            return .success(offsets)
        }
        return try result.get()
    }

    /// Every record `topics` hold now, each partition's in offset order (records published while
    /// reading may be left out).
    public func records(in topics: [Topic]) async throws(KafkaError) -> [KafkaMessage] {
        try await records(in: try await offsets(of: topics))
    }

    /// Every record between the `low` and `high` of each of `partitions` (as `offsets(of:)` read
    /// them), each partition's in offset order.
    public func records(in partitions: [PartitionOffsets]) async throws(KafkaError) -> [KafkaMessage] {
        let ranges = partitions.filter { $0.high > $0.low }
        guard !ranges.isEmpty else { return [] }
        let names = Set(ranges.map(\.topic)).sorted()
        let handle = try consumerHandle(group: "splash-inspector-\(UUID().uuidString.lowercased())")
        let deadline = ContinuousClock.now + timeout
        let result: Result<[KafkaMessage], KafkaError> = await RDKafkaHandle.blocking {
            let list = RDKafkaPartitionList(ranges.map { ($0.topic, $0.partition, $0.low) })
            let error = rd_kafka_assign(handle.pointer, list.pointer)
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR else {
                return .failure(.unreachable(reason: "could not read \(names): \(String(cString: rd_kafka_err2str(error)))"))
            }
            defer { rd_kafka_assign(handle.pointer, nil) }
            struct Key: Hashable {
                var topic: String
                var partition: Int32
            }
            var ends = Dictionary(uniqueKeysWithValues: ranges.map { (Key(topic: $0.topic, partition: $0.partition), $0.high) })
            var records: [KafkaMessage] = []
            while !ends.isEmpty {
                guard ContinuousClock.now < deadline else {
                    return .failure(.unreachable(reason: "reading \(names) took longer than \(timeout)"))
                }
                guard let message = rd_kafka_consumer_poll(handle.pointer, 100) else { continue }
                defer { rd_kafka_message_destroy(message) }
                let raw = message.pointee
                guard let topic = raw.rkt.map({ String(cString: rd_kafka_topic_name($0)) }) else { continue }
                let key = Key(topic: topic, partition: raw.partition)
                switch raw.err {
                case RD_KAFKA_RESP_ERR_NO_ERROR:
                    guard let end = ends[key] else { continue }
                    if raw.offset < end { records.append(KafkaMessage(copying: message)) }
                    if raw.offset + 1 >= end { ends[key] = nil }
                case RD_KAFKA_RESP_ERR__PARTITION_EOF:
                    ends[key] = nil
                default:
                    logger.debug("Kafka read error", metadata: ["kafka.error": "\(String(cString: rd_kafka_err2str(raw.err)))"])
                }
            }
            return .success(records.sorted { ($0.topic, $0.partition, $0.offset) < ($1.topic, $1.partition, $1.offset) })
        }
        return try result.get()
    }

    /// The topic called `name` as the cluster has it (its partition count), or `nil` when it has
    /// no such topic.
    public func topic(named name: String) async throws(KafkaError) -> Topic? {
        let handle = try consumerHandle(group: "splash-inspector-\(UUID().uuidString.lowercased())")
        let milliseconds = Int32(clamping: timeout.wholeMilliseconds)
        let result: Result<Int?, KafkaError> = await RDKafkaHandle.blocking {
            var metadata: UnsafePointer<rd_kafka_metadata>? = nil
            let error = rd_kafka_metadata(handle.pointer, 1, nil, &metadata, milliseconds)
            guard error == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                return .failure(.unreachable(reason: String(cString: rd_kafka_err2str(error))))
            }
            defer { rd_kafka_metadata_destroy(metadata) }
            for index in 0..<Int(metadata.pointee.topic_cnt) {
                let topic = metadata.pointee.topics[index]
                if String(cString: topic.topic) == name, topic.err == RD_KAFKA_RESP_ERR_NO_ERROR { return .success(Int(topic.partition_cnt)) }
            }
            return .success(nil)
        }
        return try result.get().map { Topic(name, partitions: $0, retention: .zero) }
    }

    private func consumerHandle(group: String) throws(KafkaError) -> RDKafkaHandle {
        let config = try RDKafkaConfig([
            "bootstrap.servers": bootstrapServers, "group.id": group, "enable.auto.commit": "false",
            "enable.auto.offset.store": "false", "enable.partition.eof": "true", "fetch.wait.max.ms": "50",
            "log.connection.close": "false",
        ])
        return try RDKafkaHandle(RD_KAFKA_CONSUMER, config: config, callbacks: RDKafkaCallbacks(logger: logger, statistics: nil))
    }
}
