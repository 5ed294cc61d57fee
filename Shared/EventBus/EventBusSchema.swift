import Database
import Foundation
import Logging
import PostgresNIO

/// The event bus's tables (`outbox`, `inbox`) in one service's schema.
///
/// They are migrated by the library, with a ledger of their own (`<schema>.eventbus_migrations`),
/// so every service gets the same tables and a change to them ships with the library, without the
/// service's own migration numbers having to make room.
package struct EventBusSchema: Sendable {
    package let schema: String

    /// - Throws: `MigrationError.invalidSchemaName` unless `schema` is a plain lowercase identifier.
    package init(_ schema: String) throws {
        try MigrationRunner.checkIdentifier(schema)
        self.schema = schema
    }

    /// Creates or updates the tables; safe to run from several replicas at once.
    package func migrate(on client: PostgresClient, logger: Logger) async throws {
        let migrations = try Migration.load(bundle: .module, subdirectory: "Migrations")
        let runner = try MigrationRunner(schema: schema, ledger: "eventbus_migrations", migrations: migrations)
        _ = try await runner.run(on: client, logger: logger)
    }

    /// `"<schema>".<table>`; the schema name is a validated identifier.
    func table(_ name: String) -> String { "\"\(schema)\".\(name)" }

    /// The `LISTEN` channel an outbox without a relay of its own notifies on (`Outbox`).
    var channel: String { "\(schema)_outbox" }
}
