import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import TestSupport

/// One integration test's world: a fresh database with the probe schema, a fresh topic (and its
/// dead-letter topic) on a Kafka-protocol cluster, and helpers to publish and consume probe events.
struct EventBusHarness: Sendable {
    static let schema = "probe"
    let cluster: KafkaEmbeddedCluster
    let topic: Topic
    let database: TestDatabase
    let client: PostgresClient
    let logger: Logger

    static func with<Result: Sendable>(
        cluster: KafkaEmbeddedCluster? = nil,
        partitions: Int = 6,
        _ body: @Sendable (EventBusHarness) async throws -> Result
    ) async throws -> Result {
        let cluster = if let cluster { cluster } else { try await TestKafka.shared.running() }
        let topic = Topic("test.\(UUID().uuidString.prefix(8).lowercased()).probe", partitions: partitions, retention: .seconds(3_600))
        try cluster.createTopic(topic)
        try cluster.createTopic(topic.deadLetter)
        let database = try await TestPostgres.shared.makeDatabase()
        var logger = Logger(label: "event-bus-test")
        logger.logLevel = .warning
        let finalLogger = logger
        return try await database.withClient { client in
            try await ProbeEffects.prepare(schema: schema, client: client, logger: finalLogger)
            return try await body(EventBusHarness(cluster: cluster, topic: topic, database: database, client: client, logger: finalLogger))
        }
    }

    func producer(_ name: String = "test-relay") throws -> KafkaProducer {
        try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers, clientID: name), logger: logger)
    }

    func relay(_ producer: KafkaProducer) throws -> OutboxRelay {
        var configuration = OutboxRelay.Configuration()
        configuration.pollInterval = .milliseconds(200)
        return try OutboxRelay(schema: Self.schema, client: client, producer: producer, configuration: configuration, logger: logger)
    }

    /// Writes `ProbeEvent`s for `keys` keys (`<prefix>-0`, …) × `perKey` through the outbox,
    /// key-interleaved, `batch` events per transaction.
    func writeEvents(keys: Int, perKey: Int, prefix: String = "key", batch: Int = 100, pause: Duration? = nil) async throws {
        let outbox = try Outbox(schema: Self.schema, service: "probe")
        let events = (0..<perKey).flatMap { seq in (0..<keys).map { ProbeEvent(key: "\(prefix)-\($0)", seq: seq) } }
        for start in stride(from: 0, to: events.count, by: batch) {
            let slice = events[start..<min(start + batch, events.count)]
            try await client.withTransaction(logger: logger) { connection in
                for event in slice {
                    try await outbox.append(event, topic: topic.name, on: connection, logger: logger)
                }
            }
            if let pause { try await Task.sleep(for: pause) }
        }
    }

    /// A consumer in `group` applying probe events through the inbox; `calls` counts handler runs.
    func consumer(
        group: String,
        calls: HandlerCalls = HandlerCalls(),
        retry: RetryPolicy = RetryPolicy(attempts: 3, initialBackoff: .milliseconds(20)),
        deadLetters: KafkaProducer,
        failing: (@Sendable (ProbeEvent) -> Bool)? = nil
    ) throws -> EventConsumer {
        let inbox = try Inbox(schema: Self.schema, client: client, logger: logger)
        var configuration = KafkaConsumerConfiguration(
            bootstrapServers: cluster.bootstrapServers,
            clientID: group,
            groupID: group,
            topics: [topic.name]
        )
        configuration.sessionTimeout = .seconds(10)
        let logger = self.logger
        return EventConsumer(
            configuration: configuration,
            registry: EventRegistry([ProbeEvent.self]),
            deadLetters: deadLetters,
            retry: retry,
            logger: logger
        ) { event in
            let probe = event.event as! ProbeEvent
            calls.record(probe)
            if let failing, failing(probe) { throw ProbeFailure() }
            try await inbox.handle(event, consumer: group) { event, connection in
                try await ProbeEffects.apply(probe, schema: Self.schema, on: connection, logger: logger)
            }
        }
    }

    func waitForEffects(_ count: Int, timeout: Duration = .seconds(60)) async throws -> ProbeEffects.Summary {
        try await ProbeEffects.waitForEffects(count, schema: Self.schema, client: client, logger: logger, timeout: timeout)
    }
}

struct ProbeFailure: Error, CustomStringConvertible {
    var description: String { "the probe handler refuses this event" }
}

/// How often a handler ran, in total.
final class HandlerCalls: Sendable {
    private let count = Mutex(0)

    func record(_: ProbeEvent) { count.withLock { $0 += 1 } }
    var total: Int { count.withLock { $0 } }
}
