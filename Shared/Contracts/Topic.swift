/// A Kafka topic of the Splash event catalog (docs/events.md).
public struct Topic: Sendable, Hashable, CustomStringConvertible {
    /// How the broker discards old records.
    public enum CleanupPolicy: String, Sendable {
        case delete
        /// Keep at least the newest record per key beyond the retention time.
        case compactAndDelete = "compact,delete"
    }

    public var name: String
    public var partitions: Int
    public var retention: Duration
    public var cleanupPolicy: CleanupPolicy

    public init(_ name: String, partitions: Int, retention: Duration, cleanupPolicy: CleanupPolicy = .delete) {
        self.name = name
        self.partitions = partitions
        self.retention = retention
        self.cleanupPolicy = cleanupPolicy
    }

    public var description: String { name }

    /// Retention in milliseconds, as Kafka's `retention.ms` takes it.
    public var retentionMilliseconds: Int64 { retention.wholeMilliseconds }

    /// The dead-letter topic of this topic: `<name>.dlq`, one partition, kept 14 days.
    public var deadLetter: Topic {
        Topic("\(name).dlq", partitions: 1, retention: .days(14))
    }
}

extension Duration {
    /// Whole milliseconds, as Kafka's `*.ms` settings take them.
    package var wholeMilliseconds: Int64 {
        components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
    }

    static func days(_ days: Int64) -> Duration { .seconds(days * 86_400) }
    static func hours(_ hours: Int64) -> Duration { .seconds(hours * 3_600) }
}
