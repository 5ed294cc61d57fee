import AsyncSignals
import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Publishes a service's outbox rows to Kafka, in id order, and marks them published after their
/// delivery reports.
///
/// Each round runs in one transaction that first takes a transaction-level advisory lock for the
/// schema: with several replicas running, one relay publishes at a time and marks its rows before
/// the next can start, so per-key order holds across replicas and no row is published by two relays
/// at once. A relay that dies between publishing and committing leaves its rows unmarked; they are
/// published again (consumers deduplicate by event id). The relay wakes on the outbox trigger's
/// `NOTIFY` and also polls every `pollInterval`, so a lost notification delays but never strands a
/// row. A record Kafka refuses for good is marked `failed_at` (and logged) so it cannot block its
/// key forever; retriable failures are retried with backoff.
public final class OutboxRelay: Service, Sendable {
    public struct Configuration: Sendable {
        public var batchSize = 500
        public var pollInterval: Duration = .seconds(1)
        /// Published rows are deleted after this long.
        public var retention: Duration = .seconds(3_600)

        public init() {}
    }

    private let schema: EventBusSchema
    private let client: PostgresClient
    private let producer: KafkaProducer
    private let configuration: Configuration
    private let logger: Logger
    private let published: Counter
    private let failed: Counter
    private let latency: Metrics.Timer
    /// Rouses the publishing loop: a notification, a commit in this process, shutdown.
    private let wakeup = Wakeup()

    /// - Throws: `MigrationError.invalidSchemaName` for a schema that is not a plain identifier.
    public init(
        schema: String,
        client: PostgresClient,
        producer: KafkaProducer,
        configuration: Configuration = Configuration(),
        logger: Logger
    ) throws {
        self.schema = try EventBusSchema(schema)
        self.client = client
        self.producer = producer
        self.configuration = configuration
        self.logger = logger
        published = Counter(label: "outbox_published_total", dimensions: [("schema", schema)])
        failed = Counter(label: "outbox_publish_failures_total", dimensions: [("schema", schema)])
        latency = Metrics.Timer(label: "outbox_publish_delay_seconds", dimensions: [("schema", schema)], preferredDisplayUnit: .seconds)
    }

    /// Publishes what was just committed, without waiting for the next poll (`Outbox` calls it
    /// after its transaction's commit).
    package func wake() {
        wakeup.signal()
    }

    public func run() async throws {
        let wakeup = self.wakeup
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listen(wakeup: wakeup) }
                var failures = 0
                var lastCleanup = ContinuousClock.now
                while !Task.isShuttingDownGracefully, !Task.isCancelled {
                    var round = Round.nothing
                    do {
                        round = try await publishPending()
                        failures = round.retriableFailures > 0 ? failures + 1 : 0
                    } catch {
                        failures += 1
                        logger.warning("Outbox relay round failed", metadata: ["error": "\(String(reflecting: error))"])
                    }
                    if ContinuousClock.now - lastCleanup > .seconds(60) {
                        try? await deletePublished()
                        lastCleanup = .now
                    }
                    if failures > 0 {
                        // Back off while Kafka or Postgres is failing: 100 ms doubling to 5 s.
                        try? await Task.sleep(for: .milliseconds(min(5_000, 100 << min(failures, 6))))
                    } else if round.contended {
                        // Another replica's relay is at work and will not be woken for what this
                        // one was woken for: try again shortly.
                        try? await Task.sleep(for: .milliseconds(10))
                    } else if round.published < configuration.batchSize {
                        await wakeup.wait(upTo: configuration.pollInterval)
                    }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            wakeup.signal()
        }
    }

    package struct Round: Sendable {
        package var published: Int
        package var retriableFailures: Int
        /// Another relay of the schema held the lock.
        package var contended = false

        /// A round that found nothing to do.
        static let nothing = Round(published: 0, retriableFailures: 0)
        /// A round that found another relay at work.
        static let busy = Round(published: 0, retriableFailures: 0, contended: true)
    }

    /// Publishes up to one batch of pending rows and marks them, in one transaction under the
    /// schema's relay lock. Returns without doing anything (`contended`) when another relay holds
    /// the lock.
    /// With `markingPublished: false` the transaction is rolled back after publishing, as if the
    /// relay had died before its commit (tests use it).
    package func publishPending(markingPublished: Bool = true) async throws -> Round {
        try await client.withTransaction(settings: [], logger: logger) { [self] connection in
            let lockName = "splash.outbox.\(schema.schema)"
            let locked =
                try await connection.query("SELECT pg_try_advisory_xact_lock(hashtextextended(\(lockName), 0))", logger: logger)
                .collect().first?.decode(Bool.self) ?? false
            guard locked else { return .busy }
            let rows = try await claim(on: connection)
            guard !rows.isEmpty else { return .nothing }
            let outcomes = await producer.send(rows.map(\.record))
            let round = try await settle(rows, outcomes: outcomes, on: connection)
            guard markingPublished else { throw RelayInterrupted(round: round) }
            return round
        }
    }

    /// Rolls back a round on purpose (see `publishPending(markingPublished:)`).
    package struct RelayInterrupted: Error {
        package var round: Round
    }

    struct PendingRow {
        var id: Int64
        var createdAt: Date
        var record: KafkaRecord
    }

    private func claim(on connection: PostgresConnection) async throws -> [PendingRow] {
        let query = PostgresQuery(
            unsafeSQL: """
                SELECT id, event_id, topic, key, type, source, subject, occurred_at, payload, created_at
                FROM \(schema.table("outbox"))
                WHERE published_at IS NULL AND failed_at IS NULL
                ORDER BY id
                LIMIT \(configuration.batchSize)
                """
        )
        var rows: [PendingRow] = []
        for try await (id, eventID, topic, key, type, source, subject, occurredAt, payload, createdAt) in try await connection.query(
            query,
            logger: logger
        )
        .decode((Int64, UUID, String, String, String, String, String?, Date, Data, Date).self) {
            let envelope = EventEnvelope(id: eventID, source: source, type: type, time: occurredAt, subject: subject, key: key, data: Array(payload))
            rows.append(PendingRow(id: id, createdAt: createdAt, record: envelope.record(topic: topic)))
        }
        return rows
    }

    private func settle(
        _ rows: [PendingRow],
        outcomes: [Result<KafkaDeliveryReport, KafkaDeliveryError>],
        on connection: PostgresConnection
    ) async throws -> Round {
        var delivered: [Int64] = []
        var retriable: [(Int64, String)] = []
        var refused: [(Int64, String)] = []
        let now = Date()
        for (row, outcome) in zip(rows, outcomes) {
            switch outcome {
            case .success:
                delivered.append(row.id)
                latency.record(duration: .milliseconds(Int64(max(0, now.timeIntervalSince(row.createdAt)) * 1_000)))
            case .failure(let error) where error.isRetriable:
                retriable.append((row.id, error.description))
            case .failure(let error):
                refused.append((row.id, error.description))
                logger.error(
                    "Kafka refused an outbox event for good; skipping it",
                    metadata: ["outbox.id": "\(row.id)", "kafka.topic": "\(row.record.topic)", "error": "\(error.logDescription)"]
                )
            }
        }
        if !delivered.isEmpty {
            try await connection.query(
                "UPDATE \(unescaped: schema.table("outbox")) SET published_at = now(), attempts = attempts + 1 WHERE id = ANY(\(delivered))",
                logger: logger
            )
        }
        for (failures, column) in [(retriable, "NULL"), (refused, "now()")] where !failures.isEmpty {
            try await connection.query(
                """
                UPDATE \(unescaped: schema.table("outbox")) AS o SET attempts = o.attempts + 1, last_error = f.error, failed_at = \(unescaped: column)
                FROM unnest(\(failures.map(\.0))::bigint[], \(failures.map(\.1))::text[]) AS f(id, error) WHERE o.id = f.id
                """,
                logger: logger
            )
        }
        published.increment(by: delivered.count)
        failed.increment(by: retriable.count + refused.count)
        return Round(published: delivered.count, retriableFailures: retriable.count)
    }

    private func deletePublished() async throws {
        let seconds = Double(configuration.retention.components.seconds)
        try await client.query(
            "DELETE FROM \(unescaped: schema.table("outbox")) WHERE published_at < now() - make_interval(secs => \(seconds))",
            logger: logger
        )
    }

    /// Holds one connection listening on the schema's channel (what an outbox without a relay of
    /// its own notifies) and turns notifications into wake-ups; reconnects after a failure.
    private func listen(wakeup: Wakeup) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: schema.channel) { notifications in
                        wakeup.signal()  // rows may have arrived while we were not listening
                        for try await _ in notifications { wakeup.signal() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("Outbox relay lost its LISTEN connection; reconnecting", metadata: ["error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}
