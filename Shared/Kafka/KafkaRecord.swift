/// A record to publish: topic, key (which picks the partition), value and headers.
public struct KafkaRecord: Sendable, Hashable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// A fixed partition, or `nil` to let the key choose (librdkafka's consistent-random hash,
    /// the same as the Java client's for keyed records).
    public var partition: Int32?

    public init(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    public init(topic: String, key: String, value: [UInt8], headers: [KafkaHeader] = []) {
        self.init(topic: topic, key: Array(key.utf8), value: value, headers: headers)
    }
}

/// Where a record landed, from its delivery report.
public struct KafkaDeliveryReport: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
}
