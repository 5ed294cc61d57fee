import Database
import Foundation
import Logging
import PostgresNIO

/// Makes a Postgres-writing handler idempotent: the event id is recorded in the service's `inbox`
/// table in the same transaction as the handler's writes, so a redelivered event is acknowledged
/// without running the handler again, and a handler that fails leaves no trace of either.
public struct Inbox: Sendable {
    private let schema: EventBusSchema
    private let client: PostgresClient
    private let logger: Logger

    /// - Throws: `MigrationError.invalidSchemaName` for a schema that is not a plain identifier.
    public init(schema: String, client: PostgresClient, logger: Logger) throws {
        self.schema = try EventBusSchema(schema)
        self.client = client
        self.logger = logger
    }

    /// Runs `body` for `event` in a transaction, unless `consumer` already handled this event id.
    /// Returns whether `body` ran. Two deliveries racing each other are serialised by the inbox row:
    /// the second waits for the first to commit, then finds the event handled.
    /// - Parameter settings: set transaction-locally (`app.service`, say, for row-level security) by
    ///   the statement that records the event, so they cost no round trip of their own.
    /// - Throws: what `body` throws (after rolling back), or the database's error.
    @discardableResult
    public func handle(
        _ event: ReceivedEvent,
        consumer: String,
        settings: [(name: String, value: String)] = [],
        _ body: @escaping @Sendable (ReceivedEvent, PostgresConnection) async throws -> Void
    ) async throws -> Bool {
        var bindings = PostgresBindings()
        bindings.append(consumer)
        bindings.append(event.envelope.id)
        bindings.append(event.envelope.type)
        let calls = bindings.settingLocally(settings)
        let source = calls.isEmpty ? "VALUES ($1, $2, $3)" : "SELECT $1, $2, $3 FROM (SELECT \(calls.joined(separator: ", "))) AS settings"
        let record = PostgresQuery(
            unsafeSQL: "INSERT INTO \(schema.table("inbox")) (consumer, event_id, type) \(source) ON CONFLICT DO NOTHING RETURNING 1",
            binds: bindings
        )
        return try await client.withTransaction(settings: [], logger: logger) { [logger] connection in
            let inserted = try await connection.query(record, logger: logger).collect()
            guard !inserted.isEmpty else {
                logger.debug("Event already handled; acknowledging it", metadata: ["event.id": "\(event.envelope.id)", "consumer": "\(consumer)"])
                return false
            }
            try await body(event, connection)
            return true
        }
    }

    /// A handler for `EventConsumer` that runs `body` through the inbox under `consumer`, with
    /// `settings` set in its transaction.
    public func handler(
        consumer: String,
        settings: [(name: String, value: String)] = [],
        _ body: @escaping @Sendable (ReceivedEvent, PostgresConnection) async throws -> Void
    ) -> @Sendable (ReceivedEvent) async throws -> Void {
        { event in try await self.handle(event, consumer: consumer, settings: settings, body) }
    }
}
