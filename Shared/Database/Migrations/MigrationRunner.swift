import Logging
import PostgresNIO
import ServiceKit

/// Applies a service's migrations to its schema.
///
/// Runs on one connection holding a Postgres advisory lock named after the schema, so replicas
/// starting together apply each migration exactly once: the others wait, then find it applied.
/// Each migration runs in its own transaction with `search_path` set to the schema, and is recorded
/// with its checksum in `<schema>.<ledger>` (`schema_migrations` unless a shared library keeps its
/// own tables in the schema under a ledger of its own) in the same transaction.
package struct MigrationRunner: Sendable {
    package let schema: String
    package let ledger: String
    package let migrations: [Migration]

    /// - Throws: `MigrationError.invalidSchemaName` unless `schema` and `ledger` are plain lowercase
    ///   identifiers.
    package init(schema: String, ledger: String = "schema_migrations", migrations: [Migration]) throws {
        try Self.checkIdentifier(schema)
        try Self.checkIdentifier(ledger)
        self.ledger = ledger
        self.schema = schema
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Accepts only plain lowercase identifiers (`a-z` first, then `a-z 0-9 _`, at most 63 bytes),
    /// which are safe to splice into SQL unquoted or quoted.
    /// - Throws: `MigrationError.invalidSchemaName` naming anything else.
    package static func checkIdentifier(_ name: String) throws {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first),
            name.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }),
            name.utf8.count <= 63
        else { throw MigrationError.invalidSchemaName(name) }
    }

    /// What a run did.
    package struct Report: Sendable, Equatable {
        /// Versions this run applied, in order.
        package var applied: [Int]
        /// Versions that were already applied before this run.
        package var alreadyApplied: [Int]

        package init(applied: [Int], alreadyApplied: [Int]) {
            self.applied = applied
            self.alreadyApplied = alreadyApplied
        }
    }

    /// Applies every pending migration.
    /// - Throws: `MigrationError.checksumMismatch` when an applied migration's file changed (nothing
    ///   is applied then), `.statementFailed` when a migration fails (it is rolled back; earlier ones
    ///   stay applied), or the database's error.
    @discardableResult
    package func run(on client: PostgresClient, logger: Logger) async throws -> Report {
        try await client.withConnection { connection in
            try await run(on: connection, logger: logger)
        }
    }

    private func run(on connection: PostgresConnection, logger: Logger) async throws -> Report {
        let lockName = "splash.migrations.\(schema)"
        try await connection.query("SELECT pg_advisory_lock(hashtextextended(\(lockName), 0))", logger: logger)
        do {
            let report = try await applyPending(on: connection, logger: logger)
            try await connection.query("SELECT pg_advisory_unlock(hashtextextended(\(lockName), 0))", logger: logger)
            return report
        } catch {
            // A failed statement leaves the connection usable; unlock before reporting the failure.
            _ = try? await connection.query("ROLLBACK", logger: logger)
            _ = try? await connection.query("SELECT pg_advisory_unlock(hashtextextended(\(lockName), 0))", logger: logger)
            throw error
        }
    }

    private func applyPending(on connection: PostgresConnection, logger: Logger) async throws -> Report {
        let quotedSchema = "\"\(schema)\""  // validated identifier: safe to splice
        let schemaExists =
            try await connection.query("SELECT 1 FROM pg_namespace WHERE nspname = \(schema)", logger: logger)
            .collect().isEmpty == false
        if !schemaExists {
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(quotedSchema)"), logger: logger)
        }
        try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    CREATE TABLE IF NOT EXISTS \(quotedSchema).\(ledger) (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        checksum text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """
            ),
            logger: logger
        )

        var applied: [Int: String] = [:]
        let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT version, checksum FROM \(quotedSchema).\(ledger)"), logger: logger)
        for try await (version, checksum) in rows.decode((Int, String).self) {
            applied[version] = checksum
        }

        for migration in migrations {
            guard let recorded = applied[migration.version] else { continue }
            if recorded != migration.checksum {
                throw MigrationError.checksumMismatch(schema: schema, file: migration.fileName, applied: recorded, current: migration.checksum)
            }
        }
        let known = Set(migrations.map(\.version))
        for version in applied.keys.sorted() where !known.contains(version) {
            logger.warning("schema \(schema) has migration \(version) applied that this build does not know; the database is ahead of the code")
        }

        var report = Report(applied: [], alreadyApplied: migrations.map(\.version).filter { applied[$0] != nil })
        for migration in migrations where applied[migration.version] == nil {
            try await apply(migration, on: connection, quotedSchema: quotedSchema, logger: logger)
            report.applied.append(migration.version)
        }
        return report
    }

    private func apply(_ migration: Migration, on connection: PostgresConnection, quotedSchema: String, logger: Logger) async throws {
        let start = ContinuousClock.now
        try await connection.query("BEGIN", logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL search_path TO \(quotedSchema), public"), logger: logger)
        for (number, statement) in SQLScript.statements(in: migration.sql).enumerated() {
            do {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            } catch let error as PSQLError {
                throw MigrationError.statementFailed(
                    schema: schema,
                    file: migration.fileName,
                    statement: number + 1,
                    message: error.serverInfo?[.message] ?? String(describing: error.code)
                )
            }
        }
        try await connection.query(
            PostgresQuery(
                unsafeSQL: "INSERT INTO \(quotedSchema).\(ledger) (version, name, checksum) VALUES ($1, $2, $3)",
                binds: {
                    var binds = PostgresBindings()
                    binds.append(migration.version)
                    binds.append(migration.name)
                    binds.append(migration.checksum)
                    return binds
                }()
            ),
            logger: logger
        )
        try await connection.query("COMMIT", logger: logger)
        logger.info(
            "applied migration",
            metadata: [
                "schema": .string(schema),
                "migration": .string(migration.fileName),
                "duration_ms": .stringConvertible(start.duration(to: .now).milliseconds.rounded()),
            ]
        )
    }
}
