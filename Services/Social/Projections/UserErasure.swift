import Blobs
import Contracts
import Database
import EventBus
import Foundation
import Identity
import Logging
import PostgresNIO

/// What social removes of a deleted user (`auth.user.deleted.v1`), in the inbox's transaction:
/// their likes (the counts fall with them), collections, posts and the objects under them,
/// avatars and pending uploads, the profile and edits it projected; then `social.user.erased.v1`
/// says how many of each. The blobs go once the transaction has committed, listed as intents
/// first so that the collector finishes whatever a crash interrupts.
struct UserErasure: Sendable {
    let outbox: Outbox
    let objects: ObjectStore
    /// This replica's refusal of deleted users' tokens, begun before the erasure.
    let deletedUsers: DeletedUsers
    let logger: Logger

    func erase(_ deleted: UserDeleted, on connection: PostgresConnection) async throws {
        let user = deleted.userId
        deletedUsers.record(user, deletedAt: deleted.deletedAt)
        let rows = try await connection.query(
            """
            WITH likes AS (
                DELETE FROM likes WHERE user_id = \(user) RETURNING 1
            ), collections AS (
                DELETE FROM collections WHERE owner_id = \(user) RETURNING 1
            ), posts AS (
                DELETE FROM posts WHERE user_id = \(user) RETURNING 1
            ), edits AS (
                DELETE FROM edits WHERE user_id = \(user) RETURNING 1
            ), profiles AS (
                DELETE FROM profiles WHERE user_id = \(user) RETURNING 1
            )
            SELECT (SELECT count(*) FROM likes), (SELECT count(*) FROM collections), (SELECT count(*) FROM posts),
                   (SELECT count(*) FROM edits), (SELECT count(*) FROM profiles)
            """,
            logger: logger
        )
        let (likes, collections, posts, edits, profiles) = try await rows.collect()[0].decode((Int, Int, Int, Int, Int).self)
        // After the posts that held them (a post's object cannot go while the post exists).
        var blobKeys = try await connection.query("DELETE FROM objects WHERE owner_id = \(user) RETURNING blob_key", logger: logger).collect()
            .compactMap { BlobKey(try $0.decode(String.self)) }
        for key in blobKeys { try await ObjectStore.intend(.delete, key, on: connection, logger: logger) }
        // Resumable uploads not finished, and the parts they have.
        let resumable = try await connection.query("SELECT id FROM resumable_uploads WHERE owner_id = \(user)", logger: logger).collect()
            .map { try $0.decode(UUID.self) }
        blobKeys += try await ResumableUploads.delete(resumable, on: connection, logger: logger).1
        // The tombstones their lists' deletions (these included) left for their devices' sync.
        try await connection.query("DELETE FROM sync_tombstones WHERE owner_id = \(user)", logger: logger)
        let counts = [
            "likes": likes, "collections": collections, "posts": posts, "objects": blobKeys.count, "edits": edits, "profiles": profiles,
        ]
        let event = SocialUserErased(userId: user, erasedAt: Date(), counts: counts)
        try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
        CommitHooks.current?.afterCommit { [objects, blobKeys] in
            Task { for key in blobKeys { await objects.deleteBlob(key) } }
        }
        logger.info("Erased a deleted user", metadata: ["user": "\(user)", "counts": "\(counts)"])
    }
}
