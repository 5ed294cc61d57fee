import Blobs
import CatalogClient
import Contracts
import Database
import EventBus
import Foundation
import Imaging
import Logging
import PostgresNIO
import ResourceAPI

/// What a render worker does with one `render.edit.requested.v1`: claim the edit, fetch its
/// source, render, store `{userId}/{editId}/edited.jpg`, and record the result together with
/// `render.edit.completed.v1` (or `failed` with a reason a person can read) in one transaction.
///
/// Idempotent: an edit already completed, failed or deleted is acknowledged without work, and the
/// final state is written only from `queued` or `rendering` — a job delivered twice, even to two
/// workers at once, ends in one final state and one result event. A worker killed mid-job leaves
/// its offset uncommitted, so the job goes to another worker.
struct RenderJob: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let sources: SourceFetcher
    let renderer: Renderer
    let blobs: any BlobStore
    let catalog: PhotoCatalogClient
    let metrics: RenderMetrics
    let logger: Logger
    /// After this many attempts a source that stays unavailable fails the edit.
    let maxAttempts: Int

    func handle(_ job: EditRequested) async throws {
        guard let attempt = try await claim(job) else {
            logger.debug("Edit already finished or deleted; nothing to do", metadata: ["edit": "\(job.editId)"])
            return
        }
        let started = ContinuousClock.now
        let source: FetchedSource
        do throws(SourceError) {
            source = try await sources.fetch(job.source, user: job.userId, large: job.output.longestEdge > 1080)
        } catch .permanent(let reason) {
            return try await fail(job, reason: reason)
        } catch .unavailable(let detail) {
            guard attempt < maxAttempts else {
                return try await fail(job, reason: "The photo could not be fetched after \(attempt) attempts; try again later.")
            }
            throw SourceError.unavailable(detail)
        }
        let chain: FilterChain
        do {
            chain = try FilterChain(job.filters)
        } catch {
            return try await fail(job, reason: "The edit's filters are not valid: \(error).")
        }
        let rendered: RenderedImage
        do {
            rendered = try await renderer.render(
                source.bytes,
                filters: chain,
                output: OutputRules(format: job.output.format, longestEdge: min(job.output.longestEdge, OutputRules.maxLongestEdge))
            )
        } catch let error as ImagingError {
            return try await fail(job, reason: error.description)
        }
        let key = BlobKey.edited(user: job.userId, edit: job.editId, format: job.output.format.rawValue)
        try await blobs.put(key, bytes: rendered.bytes)
        let recorded = try await complete(job, key: key, rendered: rendered, unsplashURLs: source.unsplashURLs)
        metrics.rendered(seconds: started.duration(to: .now), bytes: rendered.bytes.count)
        if recorded, case .unsplashPhoto(let photo) = job.source {
            await catalog.reportUse(photo: photo, user: job.userId)
        }
    }

    /// Marks the edit `rendering` and counts the attempt; `nil` when it is already final or gone.
    private func claim(_ job: EditRequested) async throws -> Int? {
        try await client.withUserTransaction(userID: job.userId.lowercased, logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE edits SET status = 'rendering', attempts = attempts + 1, updated_at = now()
                WHERE id = \(job.editId) AND status IN ('queued', 'rendering')
                RETURNING attempts
                """,
                logger: logger
            ).collect()
            return try rows.first?.decode(Int.self)
        }
    }

    /// Records the result (and an Unsplash original's reference) with its event; `false` when
    /// another delivery got there first.
    private func complete(_ job: EditRequested, key: BlobKey, rendered: RenderedImage, unsplashURLs: [String: String]?) async throws -> Bool {
        let original = try unsplashURLs.map { try JSONBody.text(OriginalReference(urls: $0)) }
        return try await client.withUserTransaction(userID: job.userId.lowercased, logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE edits SET status = 'completed', result_key = \(key.path), width = \(rendered.width), height = \(rendered.height),
                    bytes = \(rendered.bytes.count), quality = \(rendered.quality), original = \(original)::jsonb, updated_at = now(), finished_at = now()
                WHERE id = \(job.editId) AND status IN ('queued', 'rendering')
                RETURNING finished_at
                """,
                logger: logger
            ).collect()
            guard let finished = try rows.first?.decode(Date.self) else {
                // Deleted meanwhile (by its user, or with their account): the blob has no row.
                let exists = try await connection.query("SELECT 1 FROM edits WHERE id = \(job.editId)", logger: logger).collect()
                if exists.isEmpty {
                    logger.info("The edit was deleted while it rendered; its blob goes too", metadata: ["edit": "\(job.editId)"])
                    CommitHooks.current?.afterCommit { [blobs] in Task { try? await blobs.delete(key) } }
                }
                return false
            }
            let event = EditCompleted(
                editId: job.editId,
                userId: job.userId,
                width: rendered.width,
                height: rendered.height,
                bytes: rendered.bytes.count,
                quality: rendered.quality,
                format: rendered.format,
                completedAt: finished
            )
            try await outbox.append(event, subject: job.userId.lowercased, on: connection, logger: logger)
            return true
        }
    }

    private func fail(_ job: EditRequested, reason: String) async throws {
        logger.info("Edit failed", metadata: ["edit": "\(job.editId)", "reason": "\(reason)"])
        metrics.failed()
        try await client.withUserTransaction(userID: job.userId.lowercased, logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE edits SET status = 'failed', failure_reason = \(reason), updated_at = now(), finished_at = now()
                WHERE id = \(job.editId) AND status IN ('queued', 'rendering')
                RETURNING finished_at
                """,
                logger: logger
            ).collect()
            guard let finished = try rows.first?.decode(Date.self) else { return }
            try await outbox.append(
                EditFailed(editId: job.editId, userId: job.userId, reason: reason, failedAt: finished),
                subject: job.userId.lowercased,
                on: connection,
                logger: logger
            )
        }
    }
}
