import Foundation
import LocalStack
import Logging
import PostgresNIO
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("The local Postgres")
struct LocalPostgresTests {
    let logger = Logger(label: "local-postgres-test")

    @Test func stopsAndRemovesItsClusterWhenItsOwnerIsGone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-\(UUID().uuidString.prefix(8))")
        let cluster = try PostgresCluster(dataDirectory: directory, environment: ProcessInfo.processInfo.environment)
        try await cluster.initialize(superuserPassword: nil)

        // The owner: a process that lives until the server is up, then is stopped. (One that
        // exits by itself could be gone before a slow start-up is over.)
        let owner = ProcessCommand(URL(fileURLWithPath: "/bin/sleep"), ["600"]).makeProcess()
        try owner.run()
        defer { if owner.isRunning { owner.terminate() } }
        let port = freePort()
        let server = cluster.serverCommand(port: port, durability: .throwaway, owner: owner.processIdentifier, removeDataDirectoryOnExit: true)
            .makeProcess()
        server.standardOutput = .nullDevice
        server.standardError = .nullDevice
        try server.run()
        try await PostgresCluster.waitUntilReady(port: port, password: nil, isAlive: { server.isRunning })
        #expect(acceptsConnections(port: port))

        owner.terminate()
        try await waitUntilReady("owner exit", timeout: .seconds(5)) { !owner.isRunning }
        try await waitUntilReady("postgres exit", timeout: .seconds(10)) { !server.isRunning }
        #expect(!acceptsConnections(port: port))
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    @Test func givesEachServiceARoleThatOwnsItsSchemaAndNoOther() async throws {
        let port = try await TestPostgres.shared.port()
        let database = LocalDatabase(name: "local_\(UUID().uuidString.prefix(8).lowercased())", port: port)
        let services = ServiceCatalog.all
        let passwords = Dictionary(uniqueKeysWithValues: services.compactMap(\.role).map { ($0, "pw-\($0)") })
        try await database.provision(superuserPassword: nil, services: services, passwords: passwords, logger: logger)
        // Provisioning again (every `splash up` does) changes nothing and fails nothing.
        try await database.provision(superuserPassword: nil, services: services, passwords: passwords, logger: logger)

        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1",
            port: port,
            username: "splash_auth",
            password: "pw-splash_auth",
            database: database.name,
            tls: .disable
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            let searchPath = try await connection.query("SHOW search_path", logger: logger).collect().first?.decode(String.self)
            #expect(searchPath == "auth")
            try await connection.query("CREATE TABLE users (id int)", logger: logger)
            let schema = try await connection.query("SELECT schemaname::text FROM pg_tables WHERE tablename = 'users'", logger: logger).collect()
                .first?.decode(String.self)
            #expect(schema == "auth")
            await #expect(throws: PSQLError.self) {
                try await connection.query("CREATE TABLE catalog.stolen (id int)", logger: logger)
            }
            await #expect(throws: PSQLError.self) {
                try await connection.query("CREATE TABLE public.stray (id int)", logger: logger)
            }
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
