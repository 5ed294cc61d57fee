import Foundation
import Hummingbird
import KeySetClient
import Logging
import PostgresNIO
import ServiceKit

/// `GET /v1/workers` (admins): the render workers, each with the partitions of `render.jobs` it
/// holds, as their rows in `workers` say (`WorkerRoster`).
struct WorkersController: Sendable {
    let client: PostgresClient
    let keys: KeySetCache
    /// A worker whose row is older than this is `silent` (stopped without saying so, or stuck).
    static let silentAfter = 15

    struct Worker: ResponseEncodable {
        var id: String
        var host: String
        var pid: Int32
        var threads: Int32
        var partitions: [Int32]
        var startedAt: Date
        var seenAt: Date
        var silent: Bool
    }

    struct Workers: ResponseEncodable {
        var workers: [Worker]
    }

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("workers", use: list)
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Workers {
        guard try await keys.caller(request.headers).isAdmin else {
            throw Problem(status: .forbidden, type: "admins-only", title: "Admins only", detail: "The render workers are listed to admins only.")
        }
        let rows = try await client.query(
            """
            SELECT id, host, pid, threads, partitions, started_at, seen_at, seen_at < now() - make_interval(secs => \(Self.silentAfter))
            FROM workers ORDER BY host, started_at, id
            """,
            logger: context.logger
        )
        var workers: [Worker] = []
        for try await (id, host, pid, threads, partitions, started, seen, silent) in rows.decode(
            (String, String, Int32, Int32, [Int32], Date, Date, Bool).self
        ) {
            workers.append(
                Worker(
                    id: id,
                    host: host,
                    pid: pid,
                    threads: threads,
                    partitions: partitions.sorted(),
                    startedAt: started,
                    seenAt: seen,
                    silent: silent
                )
            )
        }
        return Workers(workers: workers)
    }
}
