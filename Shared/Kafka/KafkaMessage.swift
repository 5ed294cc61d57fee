import Foundation

/// A record read from Kafka, copied out of librdkafka's buffers.
public struct KafkaMessage: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// The record's timestamp (producer create time or broker log-append time), if it has one.
    public var timestamp: Date?

    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader], timestamp: Date?) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }

    /// The key as UTF-8 text.
    public var keyText: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
