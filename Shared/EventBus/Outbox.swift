import Contracts
import Foundation
import Logging
import PostgresNIO

/// Writes events to a service's `outbox` table inside the caller's transaction, so an event exists
/// if and only if the state change it describes committed. `OutboxRelay` publishes them.
public struct Outbox: Sendable {
    private let schema: EventBusSchema
    /// The CloudEvents `source` of this service's events: `/splash/<service>`.
    public let source: String

    /// - Throws: `MigrationError.invalidSchemaName` for a schema that is not a plain identifier.
    public init(schema: String, service: String) throws {
        self.schema = try EventBusSchema(schema)
        self.source = "/splash/\(service)"
    }

    /// Appends `event` on `connection` (which must be inside the caller's transaction) and returns
    /// its envelope. It is published to `Event.topic` unless `topic` names another.
    /// - Throws: `EncodingError` or the database's error; either aborts the caller's transaction.
    @discardableResult
    public func append<Event: DomainEvent>(_ event: Event, subject: String? = nil, time: Date = Date(), topic: String? = nil, on connection: PostgresConnection, logger: Logger) async throws -> EventEnvelope {
        let envelope = try EventEnvelope(event, source: source, time: time, subject: subject)
        try await connection.query("""
            INSERT INTO \(unescaped: schema.table("outbox")) (event_id, topic, key, type, source, subject, occurred_at, payload)
            VALUES (\(envelope.id), \(topic ?? Event.topic.name), \(envelope.key), \(envelope.type), \(envelope.source), \(envelope.subject), \(envelope.time), \(Data(envelope.data)))
            """, logger: logger)
        return envelope
    }
}
