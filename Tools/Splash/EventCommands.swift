import ArgumentParser
import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import ServiceKit

/// Where the Kafka cluster is: `--brokers`, else `KAFKA_BROKERS`, else the address `splash up`
/// wrote under the data folder.
struct BrokerOptions: ParsableArguments {
    @Option(name: .long, help: "Bootstrap servers (host:port,…). Default: $KAFKA_BROKERS, else <data-dir>/kafka.bootstrap.")
    var brokers: String?

    @OptionGroup var data: DataDirectoryOption

    func bootstrapServers() throws -> String {
        if let brokers { return brokers }
        if let brokers = ProcessInfo.processInfo.environment["KAFKA_BROKERS"], !brokers.isEmpty { return brokers }
        let file = URL(fileURLWithPath: data.dataDir).appendingPathComponent("kafka.bootstrap")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else {
            throw ValidationError("no broker address: pass --brokers, set KAFKA_BROKERS, or start `splash up` (which writes \(file.path))")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Quiet logs for the CLI's own Kafka clients: only real problems.
func cliLogger() -> Logger {
    var logger = Logger(label: "splash")
    logger.logLevel = .error
    return logger
}

struct DeadLetterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List or replay the dead letters of a topic.",
        subcommands: [List.self, Replay.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every dead letter of <topic>: where it came from, why, the event, and whether it was replayed."
        )

        @Argument(help: "The topic (auth.users) or its dead-letter topic (auth.users.dlq).")
        var topic: String
        @OptionGroup var broker: BrokerOptions

        func run() async throws {
            let office = DeadLetterOffice(bootstrapServers: try broker.bootstrapServers(), logger: cliLogger())
            let topic = try await office.deadLetterTopic(topic)
            let entries = try await office.letters(of: topic)
            for entry in entries {
                let letter = entry.letter
                say(
                    """
                    #\(entry.partition):\(entry.offset)  from \(letter.original.topic)[\(letter.original.partition)]@\(letter.original.offset)  \
                    attempts \(letter.attempts)  type \(letter.original.headers[text: "ce_type"] ?? "?")  key \(letter.original.keyText ?? "")\
                    \(entry.replayed ? "  (replayed)" : "")
                      error: \(letter.error)
                      event: \(String(decoding: letter.original.value, as: UTF8.self))
                    """
                )
            }
            say("\(entries.count) dead letter(s) on \(topic.name), \(entries.filter { !$0.replayed }.count) waiting")
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Publish the dead letters of <topic> back to their original topic.",
            discussion:
                "Progress is committed in the consumer group splash-dlq-replay.<topic>.dlq, so each dead letter is replayed once. With --partition and --offset, only that one."
        )

        @Argument(help: "The topic (auth.users) or its dead-letter topic (auth.users.dlq).")
        var topic: String
        @Option(help: "With --offset: replay only the letter there.")
        var partition: Int32?
        @Option(help: "With --partition: replay only the letter there.")
        var offset: Int64?
        @OptionGroup var broker: BrokerOptions

        func validate() throws {
            guard (partition == nil) == (offset == nil) else { throw ValidationError("--partition and --offset go together") }
        }

        func run() async throws {
            let office = DeadLetterOffice(bootstrapServers: try broker.bootstrapServers(), logger: cliLogger())
            let topic = try await office.deadLetterTopic(topic)
            let replay =
                if let partition, let offset {
                    try await office.replay(topic, partition: partition, offset: offset)
                } else {
                    try await office.replayAll(topic)
                }
            for (entry, report) in replay.published {
                say("replayed #\(entry.partition):\(entry.offset) to \(report.topic)[\(report.partition)]@\(report.offset)")
            }
            say("\(replay.published.count) dead letter(s) replayed from \(topic.name)")
        }
    }
}

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Watch domain events.",
        subcommands: [Tail.self]
    )

    struct Tail: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each event of <topic> as it arrives: time, type, key and payload. Ctrl-C stops."
        )

        @Argument(help: "The topic, such as auth.users.")
        var topic: String
        @Flag(name: .long, help: "Start from the oldest event the topic keeps instead of the newest.")
        var fromBeginning = false
        @OptionGroup var broker: BrokerOptions

        func run() async throws {
            var configuration = KafkaConsumerConfiguration(
                bootstrapServers: try broker.bootstrapServers(),
                clientID: "splash-tail",
                groupID: "splash-tail-\(UUID())",
                topics: [topic]
            )
            configuration.commitsOffsets = false
            configuration.startAt = fromBeginning ? .earliest : .latest
            let consumer = try KafkaConsumer(configuration: configuration, logger: cliLogger())
            try await withRunningServices([consumer], logger: cliLogger()) {
                await withTaskGroup(of: Void.self) { group in
                    for await partition in consumer.partitions {
                        group.addTask {
                            for await message in partition {
                                say(Self.line(for: message))
                            }
                        }
                    }
                }
            }
        }

        static func line(for message: KafkaMessage) -> String {
            let key = message.keyText ?? "-"
            let payload = String(decoding: message.value, as: UTF8.self)
            guard let envelope = try? EventEnvelope(message) else {
                return "\(message.timestamp.map(EventJSON.formatTimestamp) ?? "-")  (not a CloudEvent)  \(key)  \(payload)"
            }
            return "\(EventJSON.formatTimestamp(envelope.time))  \(envelope.type)  \(key)  \(payload)"
        }
    }
}
