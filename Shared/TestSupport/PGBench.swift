import Foundation
import LocalStack

/// pgbench, Postgres's own load generator, against a test database as one of its roles: a
/// benchmark's baseline (what the database alone does with the same SQL), beside the service doing
/// the same work in the same run.
package enum PGBench {
    /// Runs `script` (pgbench's script language: SQL, `\set` lines) with `clients` connections on
    /// two threads for `seconds`, prepared statements, no vacuum first.
    /// - Returns: transactions per second and each transaction's latency.
    /// - Throws: when pgbench cannot be found or fails.
    package static func run(
        _ script: String,
        database: TestDatabase,
        role: String,
        password: String,
        clients: Int,
        seconds: Int
    ) async throws
        -> (tps: Double, latency: LatencyHistogram)
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgbench-\(UUID().uuidString.prefix(8))")
        let logs = directory.appendingPathComponent("log")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("script.sql")
        try script.write(to: file, atomically: true, encoding: .utf8)
        let binaries = try PostgresBinaries.locate(environment: ProcessInfo.processInfo.environment).directory
        let output = try await ProcessCommand(
            binaries.appendingPathComponent("pgbench"),
            [
                "-h", "127.0.0.1", "-p", String(database.port), "-U", role, "-n", "-M", "prepared", "-c", String(clients), "-j", "2", "-T",
                String(seconds),
                "-f", file.path, "-l", "--log-prefix", logs.appendingPathComponent("tx").path, database.name,
            ],
            environment: ["PGPASSWORD": password]
        ).runToCompletion()
        let tps = output.split(separator: "\n").first { $0.hasPrefix("tps = ") }.flatMap { Double($0.split(separator: " ")[2]) } ?? 0
        // One line per transaction: `client transaction latency-µs script epoch µs`.
        var latency = LatencyHistogram()
        for log in try FileManager.default.contentsOfDirectory(at: logs, includingPropertiesForKeys: nil) {
            for line in try String(contentsOf: log, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count >= 3, let microseconds = Int(fields[2]) { latency.add(microseconds) }
            }
        }
        return (tps, latency)
    }
}
