import Contracts
import EventBus
import Foundation
import Kafka
import Logging
import PostgresNIO
import ServiceKit
import TestSupport

/// A consumer of the registrations on `auth.users` as a platform team would write one: Splash's
/// `EventConsumer` and `Inbox`, its effect a count per account in schema `effects` of the stack's
/// database. A redelivered event must leave every count at 1. With `refusing`, the table refuses
/// that account (a bug in the consumer, say) until `fix()`: its event is a poison one.
struct RegistrationEffects: Sendable {
    static let schema = "effects"
    let stack: SystemStack
    var refusing: UUID?

    /// Runs the consumer while `body` runs.
    func running<Result: Sendable>(_ body: @Sendable () async throws -> Result) async throws -> Result {
        var logger = Logger(label: "registration-effects")
        logger.logLevel = .warning
        let finalLogger = logger
        return try await stack.database.withClient { client in
            try await client.query("CREATE SCHEMA IF NOT EXISTS \(unescaped: Self.schema)", logger: finalLogger)
            try await EventBusSchema(Self.schema).migrate(on: client, logger: finalLogger)
            try await client.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: Self.schema).applied (account text PRIMARY KEY, times integer NOT NULL)
                """,
                logger: finalLogger
            )
            if let refusing {
                try await client.query(
                    PostgresQuery(
                        unsafeSQL: """
                            ALTER TABLE \(Self.schema).applied ADD CONSTRAINT refused CHECK (account <> '\(refusing.uuidString.lowercased())')
                            """
                    ),
                    logger: finalLogger
                )
            }
            let inbox = try Inbox(schema: Self.schema, client: client, logger: finalLogger)
            let deadLetters = try KafkaProducer(
                configuration: KafkaProducerConfiguration(bootstrapServers: stack.kafka.bootstrapServers, clientID: "effects-dlq"),
                logger: finalLogger
            )
            var configuration = KafkaConsumerConfiguration(
                bootstrapServers: stack.kafka.bootstrapServers,
                clientID: "effects",
                groupID: "effects",
                topics: [TopicCatalog.authUsers.name]
            )
            configuration.fetchMaxWait = .milliseconds(10)
            let consumer = EventConsumer(
                configuration: configuration,
                registry: EventRegistry([UserRegistered.self]),
                deadLetters: deadLetters,
                retry: RetryPolicy(attempts: 3, initialBackoff: .milliseconds(50)),
                logger: finalLogger,
                handler: inbox.handler(consumer: "effects") { event, connection in
                    try await connection.query(
                        """
                        INSERT INTO \(unescaped: Self.schema).applied (account, times) VALUES (\(event.envelope.key), 1)
                        ON CONFLICT (account) DO UPDATE SET times = applied.times + 1
                        """,
                        logger: finalLogger
                    )
                }
            )
            return try await withRunningServices([deadLetters, consumer], logger: finalLogger) { try await body() }
        }
    }

    /// Lifts the refusal: the consumer is fixed.
    func fix() async throws {
        try await stack.database.withClient { client in
            try await client.query("ALTER TABLE \(unescaped: Self.schema).applied DROP CONSTRAINT IF EXISTS refused")
        }
    }

    /// How many times each account's registration took effect, once `count` accounts have one.
    func times(forAtLeast count: Int, timeout: Duration = .seconds(90)) async throws -> [String: Int] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let times = try await stack.database.withClient { client in
                var times: [String: Int] = [:]
                for try await (account, count) in try await client.query("SELECT account, times FROM \(unescaped: Self.schema).applied").decode(
                    (String, Int).self
                ) {
                    times[account] = count
                }
                return times
            }
            if times.count >= count || ContinuousClock.now > deadline { return times }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
