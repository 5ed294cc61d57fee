import ArgumentParser
import Contracts
import Foundation
import Kafka

/// `splash kafka`: the embedded Kafka-protocol broker, until Ctrl-C.
struct KafkaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka",
        abstract: "Run the embedded Kafka-protocol broker (librdkafka's mock cluster) with every topic of the catalog.",
        discussion: "Prints the bootstrap address and writes it to <data-dir>/kafka.bootstrap. State is in memory."
    )

    @OptionGroup var data: DataDirectoryOption

    @Option(help: "Number of brokers.")
    var brokers: Int = 3

    @Option(help: "Stop when the process with this id is no longer our parent (splash up passes its own).")
    var exitWithParent: Int32?

    func validate() throws {
        guard (1...9).contains(brokers) else { throw ValidationError("--brokers must be from 1 to 9") }
    }

    func run() async throws {
        let cluster = try KafkaEmbeddedCluster(brokers: brokers, topics: TopicCatalog.all)
        let directory = URL(fileURLWithPath: data.dataDir, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let bootstrapFile = directory.appendingPathComponent("kafka.bootstrap")
        say("Kafka broker ready: \(cluster.bootstrapServers) (\(brokers) brokers)")
        for topic in TopicCatalog.all {
            say("  topic \(topic.name): \(topic.partitions) partition\(topic.partitions == 1 ? "" : "s")")
        }
        // Written last: its presence tells `splash up` that the broker and its topics are ready.
        try Data((cluster.bootstrapServers + "\n").utf8).write(to: bootstrapFile, options: .atomic)
        await waitForStop(exitingWithParent: exitWithParent)
        try? FileManager.default.removeItem(at: bootstrapFile)
        cluster.shutdown()
        say("Kafka broker stopped")
    }
}
