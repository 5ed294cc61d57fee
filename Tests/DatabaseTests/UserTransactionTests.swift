import Database
import Logging
import PostgresNIO
import TestSupport
import Testing

@Suite("Row-level security through app.user_id")
struct UserTransactionTests {
    let logger = Logger(label: "rls-test")

    @Test func seesOnlyTheRowsOfTheUserOfTheTransaction() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        try await database.withClient { client in
            let setup = Migration(
                version: 1,
                name: "notes",
                sql: """
                    CREATE TABLE notes (owner_id text NOT NULL, body text NOT NULL);
                    ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
                    CREATE POLICY notes_owner ON notes USING (owner_id = current_setting('app.user_id', true))
                        WITH CHECK (owner_id = current_setting('app.user_id', true));
                    DO $$ BEGIN
                        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'notes_app') THEN CREATE ROLE notes_app NOLOGIN; END IF;
                    END $$;
                    GRANT USAGE ON SCHEMA rls TO notes_app;
                    GRANT SELECT, INSERT ON notes TO notes_app;
                    """
            )
            try await MigrationRunner(schema: "rls", migrations: [setup]).run(on: client, logger: logger)

            // The superuser bypasses row-level security, so each transaction acts as the app role.
            for (user, body) in [("alice", "alice's note"), ("bob", "bob's note")] {
                try await client.withUserTransaction(userID: user, logger: logger) { connection in
                    try await connection.query("SET LOCAL ROLE notes_app", logger: logger)
                    try await connection.query("INSERT INTO rls.notes VALUES (\(user), \(body))", logger: logger)
                }
            }
            let alice: [String] = try await client.withUserTransaction(userID: "alice", logger: logger) { connection in
                try await connection.query("SET LOCAL ROLE notes_app", logger: logger)
                return try await connection.query("SELECT body FROM rls.notes", logger: logger).collect().map { try $0.decode(String.self) }
            }
            #expect(alice == ["alice's note"])

            // Writing a row for someone else is refused by the policy.
            await #expect(throws: (any Error).self) {
                try await client.withUserTransaction(userID: "mallory", logger: logger) { connection in
                    try await connection.query("SET LOCAL ROLE notes_app", logger: logger)
                    try await connection.query("INSERT INTO rls.notes VALUES ('alice', 'forged')", logger: logger)
                }
            }
        }
    }

    @Test func theUserSettingDoesNotOutliveItsTransaction() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        var configuration = database.configuration
        configuration.options.maximumConnections = 1  // the next query reuses the same connection
        let client = PostgresClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let inside = try await client.withUserTransaction(userID: "alice", logger: logger) { connection in
                try await connection.query("SELECT current_setting('app.user_id', true)", logger: logger).collect().first?.decode(String?.self)
            }
            #expect(inside == "alice")
            let after = try await client.query("SELECT current_setting('app.user_id', true)").collect().first?.decode(String?.self)
            #expect(after == .some(nil) || after == "")
        }
    }
}
