import EventBus
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// Keeps this process's row in `workers`: its host, process id, render threads and the
/// partitions of `render.jobs` its consumer holds, written every `interval` and deleted when it
/// stops. `GET /v1/workers` reads them (the console's Consumers page). Rows a killed worker left
/// behind stop being refreshed; they are shown as silent and deleted after an hour.
struct WorkerRoster: Service {
    let client: PostgresClient
    let consumer: EventConsumer
    let threads: Int
    let interval: Duration
    let logger: Logger
    private let host = ProcessInfo.processInfo.hostName
    private let pid = ProcessInfo.processInfo.processIdentifier
    private let id: String

    init(client: PostgresClient, consumer: EventConsumer, threads: Int, interval: Duration, logger: Logger) {
        (self.client, self.consumer, self.threads, self.interval, self.logger) = (client, consumer, threads, interval, logger)
        id = "\(host)-\(pid)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    func run() async throws {
        let started = Date()
        while !Task.isShuttingDownGracefully {
            do {
                try await write(started: started)
            } catch {
                logger.warning("Could not write this worker's row", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
        _ = try? await client.query("DELETE FROM workers WHERE id = \(id)", logger: logger)
    }

    private func write(started: Date) async throws {
        let partitions = consumer.assignment.map(\.partition)
        try await client.query(
            """
            INSERT INTO workers (id, host, pid, threads, partitions, started_at, seen_at)
            VALUES (\(id), \(host), \(Int32(pid)), \(Int32(threads)), \(partitions), \(started), now())
            ON CONFLICT (id) DO UPDATE SET partitions = excluded.partitions, threads = excluded.threads, seen_at = now()
            """,
            logger: logger
        )
        try await client.query("DELETE FROM workers WHERE seen_at < now() - interval '1 hour'", logger: logger)
    }
}
