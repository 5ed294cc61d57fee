import CRdKafka
import Contracts

/// How a `KafkaConsumer` joins its group and reads.
public struct KafkaConsumerConfiguration: Sendable {
    /// Where a group starts on a partition it has no committed offset for.
    public enum StartPosition: String, Sendable {
        case earliest, latest
    }

    public var bootstrapServers: String
    public var clientID: String
    /// The consumer group: members split the topics' partitions between them.
    public var groupID: String
    public var topics: [String]
    public var startAt: StartPosition = .earliest
    /// Whether processed offsets are committed (every `commitInterval`, and before partitions are
    /// revoked). Off for tools that only look.
    public var commitsOffsets = true
    public var commitInterval: Duration = .seconds(1)
    /// Messages buffered per partition before it is paused; it resumes at half. The buffer never
    /// grows past this (plus what one fetch already had in flight).
    public var bufferedMessagesPerPartition = 256
    /// How long a revocation waits for the message being handled on each revoked partition before
    /// it commits and lets the partition go.
    public var revocationDrainTimeout: Duration = .seconds(10)
    /// How long the broker holds an empty fetch waiting for new records (`fetch.wait.max.ms`):
    /// the worst-case latency of a quiet partition.
    public var fetchMaxWait: Duration = .milliseconds(100)
    public var sessionTimeout: Duration = .seconds(30)
    /// How long leaving the group may take when the consumer stops: letting revoked partitions'
    /// messages finish, committing, saying goodbye. A consumer that cannot reach its group (its
    /// brokers are gone) gives up after this; what it did not commit is redelivered.
    public var closeTimeout: Duration = .seconds(15)
    /// When set, every partition's stream ends once it reaches the end of what the partition holds
    /// (for tools that list a topic), and the consumer stops once all have ended.
    public var stopsAtEnd = false
    public var statisticsInterval: Duration? = .seconds(15)
    /// Further librdkafka properties, applied last.
    public var properties: [String: String] = [:]

    public init(bootstrapServers: String, clientID: String, groupID: String, topics: [String]) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.groupID = groupID
        self.topics = topics
    }

    /// Cooperative-sticky (a member joining or leaving moves only the partitions that must move)
    /// where the linked librdkafka can close such a consumer safely: before 2.3.0 it aborts the
    /// process when a cooperative-sticky member is destroyed before its first assignment
    /// (librdkafka #4312) — which Debian bookworm's 2.0.2 does under load. There, members use the
    /// eager round-robin assignor, which revokes every partition at each rebalance (committing
    /// first, so nothing is lost or repeated beyond at-least-once). Every member of a group runs
    /// the same image, so a group never mixes the two protocols.
    static let assignmentStrategy = rd_kafka_version() >= 0x0203_0000 ? "cooperative-sticky" : "roundrobin"

    var librdkafkaProperties: [String: String] {
        var properties: [String: String] = [
            "bootstrap.servers": bootstrapServers,
            "client.id": clientID,
            "group.id": groupID,
            "partition.assignment.strategy": Self.assignmentStrategy,
            "enable.auto.commit": commitsOffsets ? "true" : "false",
            "enable.auto.offset.store": "false",
            "auto.commit.interval.ms": "\(commitInterval.wholeMilliseconds)",
            "auto.offset.reset": startAt.rawValue,
            "fetch.wait.max.ms": "\(fetchMaxWait.wholeMilliseconds)",
            "session.timeout.ms": "\(sessionTimeout.wholeMilliseconds)",
            "enable.partition.eof": stopsAtEnd ? "true" : "false",
            "statistics.interval.ms": "\(statisticsInterval?.wholeMilliseconds ?? 0)",
            "log.connection.close": "false",
            "socket.nagle.disable": "true",
        ]
        properties.merge(self.properties) { _, extra in extra }
        return properties
    }
}
