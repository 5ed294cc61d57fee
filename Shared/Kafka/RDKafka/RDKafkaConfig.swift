import CRdKafka

/// An `rd_kafka_conf_t` being filled in; owns it until a client takes it over.
final class RDKafkaConfig {
    private(set) var pointer: OpaquePointer?

    init(_ properties: [String: String]) throws(KafkaError) {
        pointer = rd_kafka_conf_new()
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            try set(key, value)
        }
    }

    deinit {
        if let pointer { rd_kafka_conf_destroy(pointer) }
    }

    func set(_ key: String, _ value: String) throws(KafkaError) {
        var errorText = ErrorText()
        let result = rd_kafka_conf_set(pointer, key, value, &errorText.buffer, errorText.buffer.count)
        guard result == RD_KAFKA_CONF_OK else {
            throw KafkaError.configuration(key: key, reason: errorText.message)
        }
    }

    /// Hands the configuration to librdkafka (which then owns and frees it).
    func release() -> OpaquePointer? {
        defer { pointer = nil }
        return pointer
    }
}
