import Blobs
import Foundation
import Logging
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Deletes what no one will use: posts objects still pending (never attached to a post) past the
/// orphan lifetime, resumable uploads past their day and their parts, blobs listed for deletion,
/// and blobs whose upload was interrupted (listed longer than any upload can take). Runs every `interval`; replicas share the work through
/// `FOR UPDATE SKIP LOCKED`.
struct OrphanCollector: Service {
    let client: PostgresClient
    let objects: ObjectStore
    let resumable: ResumableUploads
    let orphanTTL: Duration
    let interval: Duration
    let logger: Logger
    /// An upload listed this long ago is not running any more: the upload route's timeout is
    /// 2 minutes, so 10 (or the orphan lifetime, if shorter).
    var abandonedUpload: Duration { min(orphanTTL, .seconds(600)) }

    func run() async throws {
        try await RepeatingTask("Collecting orphans", every: interval, logger: logger) {
            let collected = try await self.collect()
            if collected.objects + collected.blobs > 0 {
                self.logger.info("Collected orphans", metadata: ["objects": "\(collected.objects)", "blobs": "\(collected.blobs)"])
            }
        }.run()
    }

    /// One round: returns how many pending objects and expired resumable uploads, and how many
    /// listed blobs, it deleted.
    @discardableResult
    func collect(now: Date = Date()) async throws -> (objects: Int, blobs: Int) {
        let expired = now.addingTimeInterval(-Double(orphanTTL.components.seconds))
        let orphans = try await client.withServiceTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM objects WHERE id IN (
                    SELECT id FROM objects WHERE state = 'pending' AND updated_at < \(expired)
                    ORDER BY updated_at LIMIT 500 FOR UPDATE SKIP LOCKED)
                RETURNING blob_key
                """,
                logger: logger
            ).collect().compactMap { BlobKey(try $0.decode(String.self)) }
            for key in rows { try await ObjectStore.intend(.delete, key, on: connection, logger: logger) }
            return rows
        }
        let expiredUploads = try await resumable.collectExpired(now: now)
        let abandoned = now.addingTimeInterval(-Double(abandonedUpload.components.seconds))
        let listed = try await client.withServiceTransaction(logger: logger) { connection in
            try await connection.query(
                """
                SELECT blob_key FROM blob_intents WHERE action = 'delete' OR created_at < \(abandoned)
                ORDER BY created_at LIMIT 1000
                """,
                logger: logger
            ).collect().compactMap { BlobKey(try $0.decode(String.self)) }
        }
        for key in listed { await objects.deleteBlob(key) }
        return (orphans.count + expiredUploads, listed.count)
    }
}
