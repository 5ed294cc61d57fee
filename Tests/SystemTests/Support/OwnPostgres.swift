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
///
/// On a `NetworkHost`, the server runs in that host's namespace and listens on its address only,
/// so the test can partition it from the services.
actor OwnPostgres {
    let port: Int
    /// Where it listens: loopback, or its network host's address.
    nonisolated let address: String
    private let cluster: PostgresCluster
    private let directory: URL
    private let networkHost: NetworkHost?
    private var server: (process: ChildProcess, exited: OneShot<Void>)?

    private init(cluster: PostgresCluster, directory: URL, port: Int, networkHost: NetworkHost?) {
        self.cluster = cluster
        self.directory = directory
        self.port = port
        self.networkHost = networkHost
        self.address = networkHost?.address ?? "127.0.0.1"
    }

    static func start(on networkHost: NetworkHost? = nil) async throws -> OwnPostgres {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "splash-system-postgres-\(getpid())-\(UUID().uuidString.prefix(8))"
        )
        let cluster = try PostgresCluster(dataDirectory: directory, environment: ProcessInfo.processInfo.environment)
        try await cluster.initialize(superuserPassword: nil)
        if networkHost != nil {
            // The services reach it from the other end of the link, as any client on that private
            // network may (trust, like the loopback entries of this throwaway cluster).
            let rules = directory.appendingPathComponent("pg_hba.conf")
            let handle = try FileHandle(forWritingTo: rules)
            handle.seekToEndOfFile()
            handle.write(Data("host all all 10.231.0.0/16 trust\n".utf8))
            try handle.close()
        }
        let postgres = OwnPostgres(cluster: cluster, directory: directory, port: freePort(), networkHost: networkHost)
        try await postgres.serve()
        return postgres
    }

    /// A new, empty database on this server.
    func makeDatabase() async throws -> TestDatabase {
        let name = "s_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await PostgresCluster.withSuperuserConnection(
            host: address,
            port: port,
            password: nil,
            database: "postgres",
            logger: Logger(label: "system-postgres")
        ) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \"\(name)\""), logger: Logger(label: "system-postgres"))
        }
        return TestDatabase(name: name, port: port, host: address)
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
        var command = cluster.serverCommand(port: port, durability: .throwaway, owner: getpid(), listenAddress: address)
        if let networkHost { command = try networkHost.command(command) }
        let process = command.makeProcess()
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
        try await PostgresCluster.waitUntilReady(host: address, port: port, password: nil, isAlive: { process.isRunning })
    }

    private func shutDown() async {
        guard let server else { return }
        server.process.interrupt()
        await server.exited.value()
        self.server = nil
    }
}
