import Database
import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

@Suite("Migrations against a real Postgres")
struct MigrationRunnerTests {
    let logger = Logger(label: "migrations-test")

    func fixtureMigrations() throws -> [Migration] {
        try Migration.load(bundle: .module, subdirectory: "Fixtures/Migrations")
    }

    @Test func loadsNumberedFilesInOrder() throws {
        let migrations = try fixtureMigrations()
        #expect(migrations.map(\.version) == [1, 2])
        #expect(migrations.map(\.fileName) == ["0001_widgets.sql", "0002_widget_events.sql"])
        #expect(migrations[0].checksum.count == 64)
    }

    @Test func appliesEachMigrationOnceAndASecondRunIsANoOp() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let runner = try MigrationRunner(schema: "widgets", migrations: try fixtureMigrations())
        try await database.withClient { client in
            let first = try await runner.run(on: client, logger: logger)
            #expect(first == .init(applied: [1, 2], alreadyApplied: []))

            let second = try await runner.run(on: client, logger: logger)
            #expect(second == .init(applied: [], alreadyApplied: [1, 2]))

            // The tables landed in the service's schema, and the function body survived splitting.
            try await client.query("INSERT INTO widgets.widgets (owner_id, name) VALUES ('u1', 'gear')")
            let label = try await client.query("SELECT widgets.widget_label(w) FROM widgets.widgets w").collect().first?.decode(String.self)
            #expect(label == "gear (u1);")
            let recorded = try await client.query("SELECT version, name, checksum FROM widgets.schema_migrations ORDER BY version")
                .collect().map { try $0.decode((Int, String, String).self) }
            #expect(recorded.map(\.0) == [1, 2])
            #expect(recorded.map(\.1) == ["widgets", "widget_events"])
            #expect(recorded.map(\.2) == (try fixtureMigrations()).map(\.checksum))
        }
    }

    @Test func racingRunnersApplyEachMigrationExactlyOnce() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        // The second migration counts how often it runs: a race would insert two rows.
        let migrations = [
            Migration(version: 1, name: "runs", sql: "CREATE TABLE runs (n int); SELECT pg_sleep(0.2);"),
            Migration(version: 2, name: "count", sql: "INSERT INTO runs VALUES (1);"),
        ]
        let runner = try MigrationRunner(schema: "raced", migrations: migrations)
        let reports = try await withThrowingTaskGroup(of: MigrationRunner.Report.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await database.withClient { client in try await runner.run(on: client, logger: logger) }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reports.flatMap(\.applied).sorted() == [1, 2])
        #expect(reports.filter { !$0.applied.isEmpty }.count == 1)
        try await database.withClient { client in
            let count = try await client.query("SELECT count(*) FROM raced.runs").collect().first?.decode(Int.self)
            #expect(count == 1)
        }
    }

    @Test func refusesToRunWhenAnAppliedMigrationChanged() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let original = [Migration(version: 1, name: "users", sql: "CREATE TABLE users (id int);")]
        let edited = [
            Migration(version: 1, name: "users", sql: "CREATE TABLE users (id bigint);"),
            Migration(version: 2, name: "later", sql: "CREATE TABLE later (id int);"),
        ]
        try await database.withClient { client in
            try await MigrationRunner(schema: "accounts", migrations: original).run(on: client, logger: logger)
            do {
                try await MigrationRunner(schema: "accounts", migrations: edited).run(on: client, logger: logger)
                Issue.record("a changed migration was accepted")
            } catch let error as MigrationError {
                guard case .checksumMismatch(let schema, let file, _, _) = error else {
                    Issue.record("unexpected error \(error)")
                    return
                }
                #expect(schema == "accounts")
                #expect(file == "0001_users.sql")
                #expect(error.description.contains("0001_users.sql of schema accounts has changed since it was applied"))
                #expect(error.description.contains("put the change in a new migration"))
            }
            // Nothing after the mismatch was applied.
            let later = try await client.query("SELECT to_regclass('accounts.later')::text").collect().first?.decode(String?.self)
            #expect(later == .some(nil))
        }
    }

    @Test func rollsBackAFailingMigrationAndSaysWhichStatementFailed() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let migrations = [
            Migration(version: 1, name: "good", sql: "CREATE TABLE good (id int);"),
            Migration(version: 2, name: "bad", sql: "CREATE TABLE half (id int);\nINSERT INTO missing_table VALUES (1);"),
        ]
        try await database.withClient { client in
            do {
                try await MigrationRunner(schema: "partial", migrations: migrations).run(on: client, logger: logger)
                Issue.record("a failing migration was reported as applied")
            } catch let error as MigrationError {
                #expect(
                    error
                        == .statementFailed(
                            schema: "partial",
                            file: "0002_bad.sql",
                            statement: 2,
                            message: "relation \"missing_table\" does not exist"
                        )
                )
            }
            let versions = try await client.query("SELECT version FROM partial.schema_migrations").collect().map { try $0.decode(Int.self) }
            #expect(versions == [1])
            let half = try await client.query("SELECT to_regclass('partial.half')::text").collect().first?.decode(String?.self)
            #expect(half == .some(nil))
            // The advisory lock was released: a fixed migration applies at once.
            let fixed = [migrations[0], Migration(version: 2, name: "bad", sql: "CREATE TABLE half (id int);")]
            let report = try await MigrationRunner(schema: "partial", migrations: fixed).run(on: client, logger: logger)
            #expect(report.applied == [2])
        }
    }

    @Test func rejectsSchemaNamesThatAreNotPlainIdentifiers() {
        #expect(throws: MigrationError.invalidSchemaName("auth; DROP")) {
            try MigrationRunner(schema: "auth; DROP", migrations: [])
        }
    }
}
