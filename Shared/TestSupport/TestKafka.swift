import Contracts
import Foundation
import Kafka

/// The Kafka-protocol cluster of the test process: librdkafka's mock cluster with three brokers and
/// every topic of the catalog, started on first use.
package actor TestKafka {
    package static let shared = TestKafka()

    /// kcat, a Kafka client nobody here wrote, for checking the broker from outside (`make test`
    /// installs it); `nil` when it is not installed.
    package static let kcat: URL? = ["/usr/bin/kcat", "/usr/local/bin/kcat"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
        .map { URL(fileURLWithPath: $0) }

    private var cluster: KafkaEmbeddedCluster?

    /// The running cluster.
    package func running() throws -> KafkaEmbeddedCluster {
        if let cluster { return cluster }
        let started = try KafkaEmbeddedCluster(brokers: 3, topics: TopicCatalog.all)
        cluster = started
        return started
    }

    /// A new topic no other test uses, e.g. `test.3f2a9c.orders`.
    package func makeTopic(_ name: String = "events", partitions: Int = 3) throws -> Topic {
        let topic = Topic("test.\(UUID().uuidString.prefix(8).lowercased()).\(name)", partitions: partitions, retention: .seconds(3_600))
        try running().createTopic(topic)
        return topic
    }
}
