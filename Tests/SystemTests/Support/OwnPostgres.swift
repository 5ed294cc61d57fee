import AsyncSignals
import Foundation
import LocalStack
import Logging
import PostgresNIO
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A Postgres server of one system test's own, on a port and data folder it keeps, so the test can
/// restart it under load (a fast shutdown, then a start on the same port and data) without
/// disturbing the suites that share the test process's server.
actor OwnPostgres {
    let port: Int
    private let cluster: PostgresCluster
    private let directory: URL
    private var server: (process: ChildProcess, exited: OneShot<Void>)?

    private init(cluster: PostgresCluster, directory: URL, port: Int) {
        self.cluster = cluster
        self.directory = directory
        self.port = port
    }

    static func start() async throws -> OwnPostgres {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("splash-system-postgres-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = try PostgresCluster(dataDirectory: directory, environment: ProcessInfo.processInfo.environment)
        try await cluster.initialize(superuserPassword: nil)
        let postgres = OwnPostgres(cluster: cluster, directory: directory, port: freePort())
        try await postgres.serve()
        return postgres
    }

    /// A new, empty database on this server.
    func makeDatabase() async throws -> TestDatabase {
        let name = "s_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await PostgresCluster.withSuperuserConnection(port: port, password: nil, database: "postgres", logger: Logger(label: "system-postgres")) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""), logger: Logger(label: "system-postgres"))
        }
        return TestDatabase(name: name, port: port)
    }

    /// Stops the server with a fast shutdown (every session ended, what was committed kept) and
    /// starts it again on the same port and data after `downFor`.
    func restart(downFor: Duration = .zero) async throws {
        await shutDown()
        try await Task.sleep(for: downFor)
        try await serve()
    }

    /// Stops the server and deletes its data.
    func stop() async {
        await shutDown()
        try? FileManager.default.removeItem(at: directory)
    }

    private func serve() async throws {
        let process = cluster.serverCommand(port: port, durability: .throwaway, owner: getpid()).makeProcess()
        let exited = OneShot<Void>()
        process.terminationHandler = { _ in exited.complete(()) }
        process.standardInput = .nullDevice
        let log = directory.deletingLastPathComponent().appendingPathComponent(directory.lastPathComponent + ".log")
        if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = .file(handle)
        process.standardError = .file(handle)
        try process.run()
        server = (process, exited)
        try await PostgresCluster.waitUntilReady(port: port, password: nil, isAlive: { process.isRunning })
    }

    private func shutDown() async {
        guard let server else { return }
        server.process.interrupt()
        await server.exited.value()
        self.server = nil
    }
}
