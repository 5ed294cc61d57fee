import Blobs
import Contracts
import Database
import EventBus
import Foundation
import Logging
import PostgresNIO

/// What edit-render removes of a deleted user (`auth.user.deleted.v1`): their uploads, their edits
/// and every blob under their prefix (`{userId}/`: originals and rendered edits), then
/// `render.user.erased.v1` says how many of each.
///
/// The blobs go first, then the rows in the inbox's transaction: should the transaction fail, the
/// redelivery deletes what is left of both. A render finishing for the user afterwards finds its
/// edit gone and deletes its own blob (`RenderJob`).
struct UserErasure: Sendable {
    /// The consumer's name in the inbox.
    static let consumer = "edit-render-erasure"

    let outbox: Outbox
    let blobs: any BlobStore
    let logger: Logger

    /// The prefix every blob of `user` is stored under (`BlobKey.upload`, `BlobKey.edited`).
    static func blobPrefix(of user: UUID) -> String { "\(user.lowercased)/" }

    func erase(_ deleted: UserDeleted, on connection: PostgresConnection) async throws {
        let user = deleted.userId
        var blobCount = 0
        for blob in try await blobs.list(prefix: Self.blobPrefix(of: user)) {
            guard let key = BlobKey(blob.key) else { continue }
            try await blobs.delete(key)
            blobCount += 1
        }
        let rows = try await connection.query(
            """
            WITH uploads AS (
                DELETE FROM uploads WHERE user_id = \(user) RETURNING 1
            ), edits AS (
                DELETE FROM edits WHERE user_id = \(user) RETURNING 1
            )
            SELECT (SELECT count(*) FROM uploads), (SELECT count(*) FROM edits)
            """,
            logger: logger
        )
        let (uploads, edits) = try await rows.collect()[0].decode((Int, Int).self)
        // The tombstones the deletions (these included) left for their devices' sync.
        try await connection.query("DELETE FROM edit_tombstones WHERE user_id = \(user)", logger: logger)
        let counts = ["uploads": uploads, "edits": edits, "blobs": blobCount]
        let event = RenderUserErased(userId: user, erasedAt: Date(), counts: counts)
        try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
        logger.info("Erased a deleted user", metadata: ["user": "\(user)", "counts": "\(counts)"])
    }
}
