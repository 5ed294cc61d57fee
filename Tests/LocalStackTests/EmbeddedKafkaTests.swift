import Contracts
import Foundation
import Kafka
import LocalStack
import TestSupport
import Testing

@Suite("The embedded Kafka-protocol broker")
struct EmbeddedKafkaTests {
    @Test func kcatListsEveryCatalogTopicWithItsPartitionCount() async throws {
        let kcat = try #require(TestKafka.kcat, "kcat is not installed; `make test` installs it")
        let cluster = try KafkaEmbeddedCluster(brokers: 3, topics: TopicCatalog.all)
        defer { cluster.shutdown() }

        let output = try await ProcessCommand(kcat, ["-b", cluster.bootstrapServers, "-L", "-J", "-m", "10"]).runToCompletion()
        let json = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") })
        let metadata = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let brokers = try #require(metadata["brokers"] as? [[String: Any]])
        #expect(brokers.count == 3)
        let topics = try #require(metadata["topics"] as? [[String: Any]])
        var partitions: [String: Int] = [:]
        for topic in topics {
            if let name = topic["topic"] as? String, let list = topic["partitions"] as? [Any] {
                partitions[name] = list.count
            }
        }
        for topic in TopicCatalog.all {
            #expect(partitions[topic.name] == topic.partitions, "topic \(topic.name)")
        }
        #expect(partitions["auth.users"] == 6)
        #expect(partitions["render.jobs"] == 12)
        #expect(partitions["tracking.locations.dlq"] == 1)
    }

    @Test func carriesRecordsBetweenRealClients() async throws {
        let kcat = try #require(TestKafka.kcat, "kcat is not installed; `make test` installs it")
        let topic = try await TestKafka.shared.makeTopic(partitions: 2)
        let bootstrap = try await TestKafka.shared.running().bootstrapServers
        let produce = ProcessCommand(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "printf 'user-1:hello\\n' | \(kcat.path) -b \(bootstrap) -t \(topic.name) -P -K: -p 0"]
        )
        try await produce.runToCompletion()
        let consumed = try await ProcessCommand(
            kcat,
            ["-b", bootstrap, "-t", topic.name, "-C", "-p", "0", "-o", "beginning", "-c", "1", "-f", "%k=%s\\n", "-e"]
        ).runToCompletion()
        #expect(consumed.split(separator: "\n").contains("user-1=hello"))
    }
}
