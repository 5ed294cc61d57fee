import AsyncSignals
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Unsplash's download tracking: when a user uses a photo, its `links.download_location` is
/// called once — asynchronously, with the application's key, at most once per user, photo and
/// (UTC) day, retried with backoff when Unsplash fails.
///
/// `record` only writes a row (the caller never waits for Unsplash); the tracker's run loop,
/// started with the service, claims due rows with `FOR UPDATE SKIP LOCKED` — several replicas
/// share the queue without taking the same row — and reports them. A claim pushes the row's next
/// attempt a lease ahead, so a replica that dies mid-report leaves the row to be retried.
final class DownloadTracker: Service, Sendable {
    struct Settings: Sendable {
        /// The first retry's delay; each later one doubles, up to an hour.
        var retryBase: Duration = .seconds(5)
        var maxAttempts: Int = 8
        var pollInterval: Duration = .seconds(1)
        var lease: Duration = .seconds(60)
        var batchSize: Int = 16
    }

    private let client: PostgresClient
    /// `nil` in offline mode: rows are recorded as `offline` and nothing is called.
    private let reporter: (any DownloadReporter)?
    private let settings: Settings
    private let metrics: CatalogMetrics
    private let logger: Logger
    private let wakeup = Wakeup()

    init(client: PostgresClient, reporter: (any DownloadReporter)?, settings: Settings = Settings(), metrics: CatalogMetrics, logger: Logger) {
        self.client = client
        self.reporter = reporter
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
    }

    /// Records that `user` used `photo`.
    /// - Returns: `true` when this is the first use today (a report is queued), `false` when it was
    ///   already recorded.
    func record(user: UUID, photo: String) async throws -> Bool {
        let state = reporter == nil ? "offline" : "pending"
        let rows = try await client.query(
            """
            INSERT INTO catalog.downloads (user_id, photo_id, day, state)
            VALUES (\(user), \(photo), (now() AT TIME ZONE 'UTC')::date, \(state))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            logger: logger
        )
        var inserted = false
        for try await _ in rows { inserted = true }
        metrics.download(inserted ? "queued" : "duplicate")
        if inserted { wakeup.signal() }
        return inserted
    }

    func run() async throws {
        guard reporter != nil else {
            // Offline: nothing to report; stay up with the service.
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var claimed = 0
                do {
                    claimed = try await self.reportDue()
                } catch {
                    self.logger.warning("Download reports could not be claimed", metadata: ["error": "\(String(reflecting: error))"])
                }
                if claimed < self.settings.batchSize {
                    await self.wakeup.wait(upTo: self.settings.pollInterval)
                }
            }
        }
    }

    private struct Claim: Sendable {
        var user: UUID
        var photo: String
        var day: Date
        var attempts: Int
    }

    /// Claims and reports one batch of due rows.
    /// - Returns: how many rows were claimed.
    private func reportDue() async throws -> Int {
        let leaseSeconds = Int(settings.lease.components.seconds)
        let rows = try await client.query(
            """
            UPDATE catalog.downloads d
            SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => \(leaseSeconds))
            FROM (
                SELECT user_id, photo_id, day FROM catalog.downloads
                WHERE state = 'pending' AND next_attempt_at <= now()
                ORDER BY next_attempt_at LIMIT \(settings.batchSize)
                FOR UPDATE SKIP LOCKED
            ) due
            WHERE d.user_id = due.user_id AND d.photo_id = due.photo_id AND d.day = due.day
            RETURNING d.user_id, d.photo_id, d.day, d.attempts
            """,
            logger: logger
        )
        var claims: [Claim] = []
        for try await (user, photo, day, attempts) in rows.decode((UUID, String, Date, Int32).self) {
            claims.append(Claim(user: user, photo: photo, day: day, attempts: Int(attempts)))
        }
        await withTaskGroup(of: Void.self) { group in
            for claim in claims {
                group.addTask { await self.report(claim) }
            }
        }
        return claims.count
    }

    private func report(_ claim: Claim) async {
        guard let reporter else { return }
        let result = await reporter.reportDownload(of: claim.photo)
        do {
            switch result {
            case .reported:
                metrics.download("reported")
                try await finish(claim, state: "reported", error: nil)
            case .refused(let reason):
                metrics.download("failed")
                try await finish(claim, state: "failed", error: reason)
            case .retry(let reason):
                if claim.attempts >= settings.maxAttempts {
                    metrics.download("failed")
                    logger.warning(
                        "A download report was given up",
                        metadata: ["photo": "\(claim.photo)", "attempts": "\(claim.attempts)", "reason": "\(reason)"]
                    )
                    try await finish(claim, state: "failed", error: reason)
                } else {
                    metrics.download("retried")
                    let delay = min(3_600, Int(settings.retryBase.seconds * Double(1 << min(claim.attempts - 1, 20))))
                    try await client.query(
                        """
                        UPDATE catalog.downloads SET next_attempt_at = now() + make_interval(secs => \(max(1, delay))), last_error = \(reason)
                        WHERE user_id = \(claim.user) AND photo_id = \(claim.photo) AND day = \(claim.day)
                        """,
                        logger: logger
                    )
                }
            }
        } catch {
            // The lease brings the row back.
            logger.warning("A download report's outcome could not be saved", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    private func finish(_ claim: Claim, state: String, error: String?) async throws {
        try await client.query(
            """
            UPDATE catalog.downloads SET state = \(state), last_error = \(error), completed_at = now()
            WHERE user_id = \(claim.user) AND photo_id = \(claim.photo) AND day = \(claim.day)
            """,
            logger: logger
        )
    }
}

/// Reports one download of a photo to Unsplash.
protocol DownloadReporter: Sendable {
    func reportDownload(of photo: String) async -> DownloadReport
}

enum DownloadReport: Sendable, Equatable {
    case reported
    /// Will never succeed (no such photo, a download location off Unsplash's API host).
    case refused(String)
    /// Worth trying again later.
    case retry(String)
}

/// Finds the photo's `links.download_location` (through the cache, which usually has the photo
/// already) and calls it, authenticated.
struct UnsplashDownloadReporter: DownloadReporter {
    let photos: CachedUnsplash
    let upstream: UnsplashClient
    let metrics: CatalogMetrics

    func reportDownload(of photo: String) async -> DownloadReport {
        guard let request = UnsplashRequest.photo(id: photo) else { return .refused("not an Unsplash photo id") }
        let served: ServedAnswer
        do {
            served = try await photos.answer(request)
        } catch {
            return .retry(error.detail ?? error.title)
        }
        guard served.answer.status == 200 else { return .refused("Unsplash has no photo \(photo)") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(served.answer.body.readableBytesView)) as? [String: Any],
            let links = object["links"] as? [String: Any],
            let location = links["download_location"] as? String,
            let url = URL(string: location)
        else { return .retry("the photo has no links.download_location") }
        // The key goes only to Unsplash's own API host.
        guard upstream.isAPIURL(url) else { return .refused("the download location is not on Unsplash's API host") }
        do {
            let answer = try await upstream.get(url: location, endpoint: "photos/:id/download")
            metrics.upstreamCall(endpoint: "download", outcome: answer.outcome.metricLabel)
            switch answer.outcome {
            case .ok: return .reported
            case .notFound: return .refused("Unsplash has no photo \(photo)")
            case .rateLimited: return .retry("rate limited")
            case .failed(let status): return .retry("Unsplash answered \(status)")
            }
        } catch {
            metrics.upstreamCall(endpoint: "download", outcome: "unreachable")
            return .retry(error.reason)
        }
    }
}
