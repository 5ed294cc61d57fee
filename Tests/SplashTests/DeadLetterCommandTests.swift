import Contracts
import EventBus
import Foundation
import Kafka
import LocalStack
import Logging
import ServiceKit
import TestSupport
import Testing

/// `splash dlq list|replay` and `splash events tail`, run as the real binary against the test
/// cluster.
@Suite struct DeadLetterCommandTests {
    let logger = Logger(label: "dlq-command-test")

    func splash(_ arguments: [String], expectingFailure: Bool = false) async throws -> String {
        let command = ProcessCommand(SplashUp.executable, arguments)
        guard expectingFailure else { return try await command.runToCompletion() }
        do {
            let output = try await command.runToCompletion()
            Issue.record("splash \(arguments.joined(separator: " ")) succeeded: \(output)")
            return output
        } catch {
            return "\(error)"
        }
    }

    @Test func deadLettersAreListedAndReplayedOnceToTheirTopic() async throws {
        let cluster = try await TestKafka.shared.running()
        let topic = try await TestKafka.shared.makeTopic(partitions: 1)
        try cluster.createTopic(topic.deadLetter)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: "dlq-test"),
            logger: logger
        )
        let event = OnboardingCompleted(userId: UUID(), completedAt: Date(timeIntervalSince1970: 1_790_000_000))
        let record = try EventEnvelope(event, source: "/splash/auth").record(topic: topic.name)
        try await withRunningServices([producer]) {
            let original = KafkaMessage(
                topic: topic.name,
                partition: 0,
                offset: 41,
                key: record.key,
                value: record.value,
                headers: record.headers,
                timestamp: nil
            )
            try await producer.send(DeadLetter(original: original, error: "database unavailable", attempts: 5).record)
        }

        let listing = try await splash(["dlq", "list", topic.name, "--brokers", cluster.bootstrapServers])
        #expect(listing.contains("from \(topic.name)[0]@41"))
        #expect(listing.contains("attempts 5"))
        #expect(listing.contains("type \(OnboardingCompleted.type)"))
        #expect(listing.contains("error: database unavailable"))
        #expect(listing.contains("1 dead letter(s)"))

        let replay = try await splash(["dlq", "replay", topic.deadLetter.name, "--brokers", cluster.bootstrapServers])
        #expect(replay.contains("1 dead letter(s) replayed"))
        let again = try await splash(["dlq", "replay", topic.name, "--brokers", cluster.bootstrapServers])
        #expect(again.contains("0 dead letter(s) replayed"))
        #expect(
            try await splash(["dlq", "list", topic.name, "--brokers", cluster.bootstrapServers]).contains(
                "1 dead letter(s) on \(topic.deadLetter.name), 0 waiting"
            )
        )

        // Two more (after the first and its replay's marker, at offsets 2 and 3); the second
        // replayed alone, then the rest: the first only, and each once.
        let secondProducer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: "dlq-test"),
            logger: logger
        )
        try await withRunningServices([secondProducer]) {
            for offset in [42, 43] {
                let original = KafkaMessage(
                    topic: topic.name,
                    partition: 0,
                    offset: Int64(offset),
                    key: record.key,
                    value: record.value,
                    headers: record.headers,
                    timestamp: nil
                )
                try await secondProducer.send(DeadLetter(original: original, error: "timeout \(offset)", attempts: 3).record)
            }
        }
        let one = try await splash(["dlq", "replay", topic.name, "--partition", "0", "--offset", "3", "--brokers", cluster.bootstrapServers])
        #expect(one.contains("replayed #0:3 to \(topic.name)[0]"), "\(one)")
        let twice = try await splash(
            ["dlq", "replay", topic.name, "--partition", "0", "--offset", "3", "--brokers", cluster.bootstrapServers],
            expectingFailure: true
        )
        #expect(twice.contains("was replayed already"), "\(twice)")
        let listed = try await splash(["dlq", "list", topic.name, "--brokers", cluster.bootstrapServers])
        #expect(listed.contains("3 dead letter(s) on \(topic.deadLetter.name), 1 waiting"), "\(listed)")
        let rest = try await splash(["dlq", "replay", topic.name, "--brokers", cluster.bootstrapServers])
        #expect(rest.contains("replayed #0:2 to"), "\(rest)")
        #expect(rest.contains("1 dead letter(s) replayed"), "\(rest)")
        let onTopic = try await KafkaInspector(bootstrapServers: cluster.bootstrapServers, logger: logger).records(in: [topic])
        #expect(onTopic.count == 3, "the first, the second alone and the rest: \(onTopic.map(\.offset))")

        let tail = try await splash(
            ["events", "tail", topic.name, "--from-beginning", "--brokers", cluster.bootstrapServers],
            until: OnboardingCompleted.type
        )
        #expect(tail.contains("\(OnboardingCompleted.type)  \(event.aggregateID)"))
        #expect(tail.contains(#""completedAt":"2026-09-21T"#))
    }

    /// Runs `splash` until its output contains `marker` (or 30 s pass), then interrupts it.
    func splash(_ arguments: [String], until marker: String) async throws -> String {
        let output = try CapturedOutput()
        let process = ProcessCommand(SplashUp.executable, arguments).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        try process.run()
        // Whether it came or not, the expectations on the output tell.
        try? await waitUntilReady("splash \(arguments.first ?? "")", timeout: .seconds(30)) { output.text.contains(marker) }
        process.interrupt()
        return output.text
    }
}
