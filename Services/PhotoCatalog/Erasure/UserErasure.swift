import Contracts
import EventBus
import Foundation
import Logging
import PostgresNIO

/// What photo-catalog removes of a deleted user (`auth.user.deleted.v1`), in the inbox's
/// transaction: their user id on the download queue. A download already reported (or given up
/// on) has done its work and goes; one still to report to Unsplash stays, under a random id of its
/// own, so Unsplash still hears of the use. Then `catalog.user.erased.v1` says how many of each.
struct UserErasure: Sendable {
    /// The consumer's name in the inbox.
    static let consumer = "photo-catalog-erasure"

    let outbox: Outbox
    let logger: Logger

    func erase(_ deleted: UserDeleted, on connection: PostgresConnection) async throws {
        let user = deleted.userId
        let rows = try await connection.query(
            """
            WITH finished AS (
                DELETE FROM downloads WHERE user_id = \(user) AND state <> 'pending' RETURNING 1
            ), pending AS (
                UPDATE downloads SET user_id = gen_random_uuid() WHERE user_id = \(user) AND state = 'pending' RETURNING 1
            )
            SELECT (SELECT count(*) FROM finished), (SELECT count(*) FROM pending)
            """,
            logger: logger
        )
        let (finished, pending) = try await rows.collect()[0].decode((Int, Int).self)
        let counts = ["downloads": finished, "pendingDownloads": pending]
        let erased = CatalogUserErased(userId: user, erasedAt: Date(), counts: counts)
        try await outbox.append(erased, subject: erased.aggregateID, on: connection, logger: logger)
        logger.info("Erased a deleted user", metadata: ["user": "\(user)", "counts": "\(counts)"])
    }
}
