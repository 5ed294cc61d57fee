import Foundation
import Logging
import PostgresNIO
import ServiceKit

#if canImport(Glibc)
import Glibc
#endif

/// A Postgres cluster in a directory of ours: created with `initdb`, served by a `postgres` process
/// that listens on loopback only, without Unix sockets.
///
/// The server process is tethered to an owner process: a small shell wrapper stops Postgres (fast
/// shutdown) when the owner is gone, so neither a crashed `splash up` nor a finished test run
/// leaves a server holding its port and data directory.
package struct PostgresCluster: Sendable {
    /// How the server trades durability for speed.
    package enum Durability: Sendable {
        /// The defaults: data survives a crash. For `make run`.
        case durable
        /// `fsync`, `synchronous_commit` and `full_page_writes` off. For test clusters.
        case throwaway
    }

    package static let superuser = "postgres"

    package let dataDirectory: URL
    package let binaries: PostgresBinaries
    private let runAs: UnprivilegedUser?

    /// - Throws: `LocalStackError` when the Postgres programs or an unprivileged user are missing.
    package init(dataDirectory: URL, environment: [String: String]) throws {
        self.dataDirectory = dataDirectory
        self.binaries = try PostgresBinaries.locate(environment: environment)
        self.runAs = try UnprivilegedUser.forPostgres()
    }

    package var isInitialized: Bool {
        FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("PG_VERSION").path)
    }

    /// Runs `initdb`. With a `superuserPassword`, connections must authenticate (SCRAM-SHA-256);
    /// without one, every local connection is trusted (test clusters only).
    package func initialize(superuserPassword: String?) async throws {
        let manager = FileManager.default
        try manager.createDirectory(at: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try runAs?.takeOwnership(of: dataDirectory)

        var arguments = ["-D", dataDirectory.path, "-U", Self.superuser, "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions"]
        var passwordFile: URL?
        if let superuserPassword {
            let file = dataDirectory.deletingLastPathComponent().appendingPathComponent(".initdb-password-\(getpid())")
            try Data(superuserPassword.utf8).write(to: file)
            try manager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
            try runAs?.takeOwnership(of: file)
            passwordFile = file
            arguments += ["--auth=scram-sha-256", "--pwfile=\(file.path)"]
        } else {
            arguments += ["--auth=trust"]
        }
        defer { if let passwordFile { try? manager.removeItem(at: passwordFile) } }
        try await asServerUser(ProcessCommand(binaries.initdb, arguments)).runToCompletion()
    }

    /// The command that serves the cluster on `listenAddress:port` (loopback unless told),
    /// stopping when process `owner` is gone; `removeDataDirectoryOnExit` deletes the cluster once
    /// the server has stopped.
    package func serverCommand(
        port: Int,
        durability: Durability,
        owner: pid_t,
        removeDataDirectoryOnExit: Bool = false,
        listenAddress: String = "127.0.0.1"
    ) -> ProcessCommand {
        var settings = [
            "listen_addresses": listenAddress,
            "port": String(port),
            "unix_socket_directories": "",
            // The test suite runs many services' pools side by side on one throwaway cluster.
            "max_connections": durability == .throwaway ? "800" : "300",
            "log_line_prefix": "%m [%p] ",
        ]
        if durability == .throwaway {
            settings["fsync"] = "off"
            settings["synchronous_commit"] = "off"
            settings["full_page_writes"] = "off"
        }
        let server =
            [binaries.postgres.path, "-D", dataDirectory.path] + settings.sorted { $0.key < $1.key }.flatMap { ["-c", "\($0.key)=\($0.value)"] }
        let tether = ProcessCommand(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", Self.tetherScript, "postgres-tether", String(owner), removeDataDirectoryOnExit ? dataDirectory.path : ""] + server
        )
        return asServerUser(tether)
    }

    /// Waits until the server on `port` answers a query.
    /// - Throws: `LocalStackError.notReady` when `isAlive` turns false first or `timeout` passes.
    package static func waitUntilReady(
        host: String = "127.0.0.1",
        port: Int,
        password: String?,
        timeout: Duration = .seconds(30),
        isAlive: @Sendable () async -> Bool
    ) async throws {
        let logger = Logger(label: "postgres-probe")
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let answered = try? await withSuperuserConnection(host: host, port: port, password: password, database: "postgres", logger: logger) {
                connection in
                try await connection.query("SELECT 1", logger: logger)
            }
            if answered != nil { return }
            guard await isAlive() else {
                throw LocalStackError.notReady(name: "postgres", reason: "the server exited during start-up")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LocalStackError.notReady(name: "postgres", reason: "no connection on port \(port) after \(DurationFormat.format(timeout))")
    }

    /// Runs `body` on a connection to `database` of the local server on `host:port` (loopback
    /// unless told), as the superuser (no TLS), and closes the connection whatever `body` does.
    @discardableResult
    package static func withSuperuserConnection<Result>(
        host: String = "127.0.0.1",
        port: Int,
        password: String?,
        database: String,
        logger: Logger,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let configuration = PostgresConnection.Configuration(
            host: host,
            port: port,
            username: superuser,
            password: password,
            database: database,
            tls: .disable
        )
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private func asServerUser(_ command: ProcessCommand) -> ProcessCommand {
        runAs?.wrapping(command) ?? command
    }

    /// `sh -c` script: `$1` owner pid, `$2` directory to remove afterwards (or empty), the rest the
    /// server command. SIGINT/SIGTERM to the wrapper become Postgres's fast shutdown (SIGINT).
    static let tetherScript = """
        owner="$1"; remove="$2"; shift 2
        "$@" &
        child=$!
        finish() { wait "$child"; status=$?; [ -n "$remove" ] && rm -rf "$remove"; exit $status; }
        trap 'kill -INT "$child" 2>/dev/null; finish' INT TERM
        while kill -0 "$child" 2>/dev/null; do
          [ -d "/proc/$owner" ] || { kill -INT "$child" 2>/dev/null; finish; }
          sleep 1 & wait $!
        done
        finish
        """
}
