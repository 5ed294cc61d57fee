import Contracts
import Kafka

/// A record parked on `<topic>.dlq` after its handler kept failing, with why and where from.
public struct DeadLetter: Sendable, Equatable {
    public enum Header {
        public static let error = "x-error"
        public static let attempts = "x-attempts"
        public static let originalTopic = "x-original-topic"
        public static let originalPartition = "x-original-partition"
        public static let originalOffset = "x-original-offset"

        static let all: Set<String> = [error, attempts, originalTopic, originalPartition, originalOffset]
    }

    /// The record as it was consumed.
    public var original: KafkaMessage
    public var error: String
    public var attempts: Int

    public init(original: KafkaMessage, error: String, attempts: Int) {
        self.original = original
        self.error = error
        self.attempts = attempts
    }

    /// The dead-letter topic of `topic`.
    public static func topic(for topic: String) -> String { "\(topic).dlq" }

    /// The record to publish on the dead-letter topic: the original key, value and headers plus
    /// the `x-*` headers.
    public var record: KafkaRecord {
        KafkaRecord(
            topic: Self.topic(for: original.topic),
            key: original.key,
            value: original.value,
            headers: original.headers.filter { !Header.all.contains($0.name) } + [
                KafkaHeader(Header.error, String(error.prefix(2_000))),
                KafkaHeader(Header.attempts, "\(attempts)"),
                KafkaHeader(Header.originalTopic, original.topic),
                KafkaHeader(Header.originalPartition, "\(original.partition)"),
                KafkaHeader(Header.originalOffset, "\(original.offset)"),
            ]
        )
    }

    /// Reads a record consumed from a dead-letter topic.
    /// - Returns: `nil` when the `x-original-topic` header is missing.
    public init?(deadLetterMessage message: KafkaMessage) {
        let headers = message.headers
        guard let topic = headers[text: Header.originalTopic] else { return nil }
        original = KafkaMessage(
            topic: topic,
            partition: Int32(headers[text: Header.originalPartition] ?? "") ?? -1,
            offset: Int64(headers[text: Header.originalOffset] ?? "") ?? -1,
            key: message.key,
            value: message.value,
            headers: headers.filter { !Header.all.contains($0.name) },
            timestamp: message.timestamp
        )
        error = headers[text: Header.error] ?? ""
        attempts = Int(headers[text: Header.attempts] ?? "") ?? 0
    }

    /// The record that replays the event on its original topic (original key, value, headers).
    public var replayRecord: KafkaRecord {
        KafkaRecord(topic: original.topic, key: original.key, value: original.value, headers: original.headers)
    }
}
