import AsyncSignals
import Foundation
import LocalStack
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway Postgres for integration tests: one server per test process (initdb into a temporary
/// folder, a free port, fsync off), a fresh database for each suite or test that asks.
///
/// The server is tethered to the test process: it stops, and its folder is deleted, when the
/// process ends, however it ends. Nothing already running on the machine is used.
package actor TestPostgres {
    package static let shared = TestPostgres()

    private struct Server {
        var port: Int
        var process: ChildProcess
    }

    private var server: Task<Server, any Error>?

    /// A new, empty database on the shared server.
    package func makeDatabase() async throws -> TestDatabase {
        let server = try await running()
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let logger = Logger(label: "test-postgres")
        try await PostgresCluster.withSuperuserConnection(port: server.port, password: nil, database: "postgres", logger: logger) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""), logger: logger)
        }
        return TestDatabase(name: String(name), port: server.port)
    }

    /// The port of the shared server, starting it on first use.
    package func port() async throws -> Int {
        try await running().port
    }

    private func running() async throws -> Server {
        if let server { return try await server.value }
        let starting = Task { try await Self.start() }
        server = starting
        do {
            return try await starting.value
        } catch {
            server = nil  // let a later test try again, and fail with its own message
            throw error
        }
    }

    private static func start() async throws -> Server {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "splash-test-postgres-\(getpid())-\(UUID().uuidString.prefix(8))"
        )
        let cluster = try PostgresCluster(dataDirectory: directory, environment: ProcessInfo.processInfo.environment)
        try await cluster.initialize(superuserPassword: nil)
        let logFile = directory.appendingPathComponent("server.log")
        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = freePort()
            let process = cluster.serverCommand(port: port, durability: .throwaway, owner: getpid(), removeDataDirectoryOnExit: true).makeProcess()
            let exited = OneShot<Void>()
            process.terminationHandler = { _ in exited.complete(()) }
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let log = try FileHandle(forWritingTo: logFile)
            process.standardOutput = .file(log)
            process.standardError = .file(log)
            process.standardInput = .nullDevice
            try process.run()
            do {
                try await PostgresCluster.waitUntilReady(port: port, password: nil, isAlive: { process.isRunning })
                return Server(port: port, process: process)
            } catch {
                // Most likely another process took the port; try another.
                process.terminate()
                await exited.value()
                lastError = TestPostgresError(reason: "\(error)", log: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "")
            }
        }
        throw lastError!
    }
}

struct TestPostgresError: Error, CustomStringConvertible {
    var reason: String
    var log: String
    var description: String { "test Postgres did not start: \(reason)\n\(log)" }
}

/// One database of the test server, reached as the superuser.
package struct TestDatabase: Sendable {
    package let name: String
    package let port: Int
    /// The server's address: loopback, or a test's own network namespace.
    package let host: String

    /// Database `name` of the server on `host:port` (one a test runs itself, say).
    package init(name: String, port: Int, host: String = "127.0.0.1") {
        self.name = name
        self.port = port
        self.host = host
    }

    /// `postgres://` URL of the database, as a service's `DATABASE_URL` takes it.
    package var url: String {
        "postgres://\(PostgresCluster.superuser)@\(host):\(port)/\(name)?sslmode=disable"
    }

    package var configuration: PostgresClient.Configuration {
        PostgresClient.Configuration(host: host, port: port, username: PostgresCluster.superuser, password: nil, database: name, tls: .disable)
    }

    /// Creates a login role owning schema `schema` (and nothing else) in this database, searching
    /// it by default, as `splash postgres` provisions a service; returns the role's `DATABASE_URL`.
    /// Roles are cluster-wide, so the name is made unique per database: `<schema>_<database>`.
    package func makeServiceRole(schema: String, password: String) async throws -> (role: String, url: String) {
        let role = "\(schema)_\(name)"
        var logger = Logger(label: "test-postgres")
        logger.logLevel = .warning
        try await PostgresCluster.withSuperuserConnection(host: host, port: port, password: nil, database: name, logger: logger) { connection in
            // Utility statements take no bind parameters; the names are generated identifiers.
            for statement in [
                "CREATE ROLE \"\(role)\" LOGIN PASSWORD '\(password)'",
                "CREATE SCHEMA \(schema) AUTHORIZATION \"\(role)\"",
                "ALTER ROLE \"\(role)\" IN DATABASE \"\(name)\" SET search_path = \(schema)",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
        return (role, LocalDatabase(name: name, port: port, host: host).url(role: role, password: password))
    }

    /// Rows of `table` (schema-qualified) matching the SQL `condition`, read as the superuser, so
    /// row-level security hides none.
    package func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await withClient { client in
            try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*)::int FROM \(table) WHERE \(condition)")).collect().first?.decode(
                Int.self
            ) ?? 0
        }
    }

    /// Runs `body` with a connection pool to this database, closed afterwards.
    @discardableResult
    package func withClient<Result: Sendable>(_ body: @Sendable (PostgresClient) async throws -> Result) async throws -> Result {
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

extension TestDatabase {
    /// What is left of `user` in this database's service schemas and the file blob stores at
    /// `blobFolders` (`ErasureCheck`): empty once every service has erased them.
    package func erasureFindings(of user: UUID, blobFolders: [URL] = []) async throws -> [ErasureCheck.Finding] {
        try await erasureFindings(of: user, check: try ErasureCheck(blobFolders: blobFolders))
    }

    /// What `check` finds of `user` in this database and its blob stores.
    package func erasureFindings(of user: UUID, check: ErasureCheck) async throws -> [ErasureCheck.Finding] {
        var logger = Logger(label: "erasure-check")
        logger.logLevel = .warning
        return try await PostgresCluster.withSuperuserConnection(host: host, port: port, password: nil, database: name, logger: logger) {
            connection in
            try await check.findings(of: user, on: connection, logger: logger)
        }
    }
}
