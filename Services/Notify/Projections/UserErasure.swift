import Contracts
import EventBus
import Foundation
import Identity
import Logging
import Mail
import PostgresNIO

/// What notify removes of a deleted user (`auth.user.deleted.v1`), in the inbox's transaction:
/// their devices, settings, delivery log, mail (sent or queued) and name; the like windows of their
/// posts; then `notify.user.erased.v1` says how many of each. Their posts stay known as tombstones
/// without an author, so a late like of one is not told to anyone and does not bring the author
/// back.
struct UserErasure: Sendable {
    /// The author a post keeps once its author is erased: no one.
    static let nobody = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    let outbox: Outbox
    let mailOutbox: MailOutbox
    /// This replica's refusal of deleted users' tokens, begun before the erasure.
    let deletedUsers: DeletedUsers
    let logger: Logger

    func erase(_ deleted: UserDeleted, on connection: PostgresConnection) async throws {
        let user = deleted.userId
        deletedUsers.record(user, deletedAt: deleted.deletedAt)
        // The devices first, in a statement of their own: an event's deliveries to them, being
        // made now, hold them until their transaction commits, and the statement below then sees
        // those deliveries.
        let devices = try await connection.query("DELETE FROM devices WHERE user_id = \(user) RETURNING 1", logger: logger).collect().count
        let rows = try await connection.query(
            """
            WITH settings AS (
                DELETE FROM settings WHERE user_id = \(user) RETURNING 1
            ), deliveries AS (
                DELETE FROM deliveries WHERE user_id = \(user) RETURNING 1
            ), people AS (
                DELETE FROM people WHERE user_id = \(user) RETURNING 1
            ), windows AS (
                DELETE FROM like_windows WHERE author_id = \(user) RETURNING 1
            ), liked AS (
                UPDATE like_windows SET last_liker = NULL WHERE last_liker = \(user) AND author_id <> \(user)
            ), posts AS (
                UPDATE posts SET author_id = \(Self.nobody), deleted = true WHERE author_id = \(user) RETURNING 1
            )
            SELECT (SELECT count(*) FROM settings), (SELECT count(*) FROM deliveries),
                   (SELECT count(*) FROM people), (SELECT count(*) FROM windows), (SELECT count(*) FROM posts)
            """,
            logger: logger
        )
        let (settings, deliveries, people, windows, posts) = try await rows.collect()[0].decode((Int, Int, Int, Int, Int).self)
        let mail = try await mailOutbox.erase(user: user, on: connection, logger: logger)
        let counts = [
            "devices": devices, "settings": settings, "deliveries": deliveries, "mail": mail, "people": people, "likeWindows": windows,
            "posts": posts,
        ]
        let event = NotifyUserErased(userId: user, erasedAt: Date(), counts: counts)
        try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
        logger.info("Erased a deleted user", metadata: ["user": "\(user)", "counts": "\(counts)"])
    }
}
