import Contracts
import Database
import Foundation
import Logging
import PostgresNIO

/// Writes events to a service's `outbox` table inside the caller's transaction, so an event exists
/// if and only if the state change it describes committed. `OutboxRelay` publishes them.
///
/// Once a transaction that appended events commits, the relay is woken: this process's `relay`,
/// in the process, when the transaction was run with `CommitHooks` (every transaction of
/// `Database`'s); otherwise the transaction notifies the schema's channel, which every relay of the
/// schema listens on. (A `NOTIFY` in every writing transaction makes Postgres serialise their
/// commits.)
public struct Outbox: Sendable {
    private let schema: EventBusSchema
    /// The CloudEvents `source` of this service's events: `/splash/<service>`.
    public let source: String
    private let relay: OutboxRelay?

    /// - Parameter relay: this process's relay of `schema`, woken in the process after commits.
    /// - Throws: `MigrationError.invalidSchemaName` for a schema that is not a plain identifier.
    public init(schema: String, service: String, relay: OutboxRelay? = nil) throws {
        self.schema = try EventBusSchema(schema)
        self.source = "/splash/\(service)"
        self.relay = relay
    }

    /// An outbox row made for a statement that writes it itself — a change made whole in one
    /// round trip by a function of the schema — with its envelope and its topic. Once that
    /// statement has committed (and wrote the row), `committed(on:logger:)` wakes the relay.
    /// - Throws: `EncodingError` if the payload does not encode.
    public func row<Event: DomainEvent>(
        _ event: Event,
        subject: String? = nil,
        time: Date = Date()
    ) throws -> (envelope: EventEnvelope, topic: String) {
        (try EventEnvelope(event, source: source, time: time, subject: subject), Event.topic.name)
    }

    /// Wakes the relay for rows that a statement of the caller's wrote (`row`) and committed: in
    /// the process, or by notifying the schema's channel on `client` without a relay of its own.
    public func committed(on client: PostgresClient, logger: Logger) async throws {
        if let relay {
            relay.wake()
        } else {
            try await client.query(notifyingRelays, logger: logger)
        }
    }

    /// Appends `event` on `connection` (which must be inside the caller's transaction) and returns
    /// its envelope. It is published to `Event.topic` unless `topic` names another.
    /// - Throws: `EncodingError` or the database's error; either aborts the caller's transaction.
    @discardableResult
    public func append<Event: DomainEvent>(
        _ event: Event,
        subject: String? = nil,
        time: Date = Date(),
        topic: String? = nil,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws -> EventEnvelope {
        let envelope = try EventEnvelope(event, source: source, time: time, subject: subject)
        try await connection.query(
            """
            INSERT INTO \(unescaped: schema.table("outbox")) (event_id, topic, key, type, source, subject, occurred_at, payload)
            VALUES (\(envelope.id), \(topic ?? Event.topic.name), \(envelope.key), \(envelope.type), \(envelope.source), \(envelope.subject), \(envelope.time), \(Data(envelope.data)))
            """,
            logger: logger
        )
        if let relay, let hooks = CommitHooks.current {
            hooks.afterCommit { relay.wake() }
        } else {
            try await connection.query(notifyingRelays, logger: logger)
        }
        return envelope
    }

    /// Notifies the schema's channel, on which every relay of the schema listens (delivered once
    /// the notifying transaction commits).
    private var notifyingRelays: PostgresQuery {
        "SELECT pg_notify(\(schema.channel), '')"
    }
}
