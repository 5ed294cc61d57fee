import Foundation
import LocalStack
import Logging
import PostgresNIO
import TestSupport
import Testing

@Suite("Postgres set-up of docker compose")
struct ComposeRolesTests {
    /// Runs deploy/postgres/create-roles.sh with psql against the test server, as the Postgres
    /// image runs it on first start, and connects as a service role.
    @Test func createsOneRoleOwningEachServiceSchema() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let binaries = try PostgresBinaries.locate(environment: ProcessInfo.processInfo.environment)
        let candidates = [binaries.directory.appendingPathComponent("psql").path, "/usr/bin/psql"]
        let psql = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) }, "psql not found")

        let suffix = UUID().uuidString.prefix(6).lowercased()
        // Role names are cluster-wide: run the script with schema names of this test only.
        // Every service's role, suffixed so this database's roles are its own; auth's password
        // holds quotes.
        let schemas = ServiceCatalog.all.compactMap(\.schema)
        let script = schemas.reduce(try Repository.text("deploy/postgres/create-roles.sh")) { script, schema in
            script.replacingOccurrences(of: "create_role \(schema) ", with: "create_role \(schema)\(suffix) ")
        }
        var environment = [
            "PATH": URL(fileURLWithPath: psql).deletingLastPathComponent().path + ":/usr/bin:/bin",
            "PGHOST": "127.0.0.1", "PGPORT": String(database.port),
            "POSTGRES_USER": "postgres", "POSTGRES_DB": database.name,
        ]
        for schema in schemas { environment["\(schema.uppercased())_DB_PASSWORD"] = schema == "auth" ? "a'b\"c" : String(schema.prefix(1)) }
        try await ProcessCommand(URL(fileURLWithPath: "/bin/bash"), ["-c", script], environment: environment).runToCompletion()

        let logger = Logger(label: "compose-roles")
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1",
            port: database.port,
            username: "splash_auth\(suffix)",
            password: "a'b\"c",
            database: database.name,
            tls: .disable
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            try await connection.query("CREATE TABLE users (id int)", logger: logger)
            let schema = try await connection.query("SELECT schemaname::text FROM pg_tables WHERE tablename = 'users'", logger: logger).collect()
                .first?.decode(String.self)
            #expect(schema == "auth\(suffix)")
            await #expect(throws: PSQLError.self) {
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE TABLE catalog\(suffix).stolen (id int)"), logger: logger)
            }
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
