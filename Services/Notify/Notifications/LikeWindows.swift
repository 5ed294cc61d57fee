import Contracts
import Database
import Foundation
import Identity
import Logging
import PostgresNIO
import ServiceKit

/// Likes on a post, told to its author without a push per like: the first like of a quiet post is
/// pushed at once and opens a window of `window`; the likes that come in it are counted, and when
/// it closes they are pushed as one ("Aino and 4 others liked your post"). Only posts' likes
/// (photo keys `post:{id}`), never the author's own, and none of a deleted post.
struct LikeWindows: Sendable {
    let client: PostgresClient
    let queue: DeliveryQueue
    var window: Duration = .seconds(600)
    let logger: Logger

    /// What `liked` means, on the inbox's transaction of `occasion`: a notification to push now, or
    /// one more like counted in the post's open window, or nothing (not a post, an unknown post,
    /// the author's own like).
    /// - Returns: how many deliveries are due now.
    func record(_ liked: PhotoLiked, occasion: Occasion, on connection: PostgresConnection) async throws -> Int {
        guard liked.photoId.hasPrefix("post:"), let post = UUID(uuidString: String(liked.photoId.dropFirst("post:".count))) else { return 0 }
        // A like that names the author teaches the projection the post (its own event may come
        // later: it is on the author's partition, the like on the liker's).
        if let owner = liked.ownerId {
            try await connection.query(
                "INSERT INTO posts (post_id, author_id) VALUES (\(post), \(owner)) ON CONFLICT DO NOTHING",
                logger: logger
            )
        }
        // The post's row serialises its likes (each liker's events come on their own partition,
        // consumed side by side); the window is read after, in a statement of its own, so a like
        // that waited for the lock sees the window the one before it opened.
        let locked = try await connection.query(
            "SELECT author_id FROM posts WHERE post_id = \(post) AND NOT deleted FOR UPDATE",
            logger: logger
        )
        var author: UUID?
        for try await id in locked.decode(UUID.self) { author = id }
        guard let author, author != liked.userId else { return 0 }
        let rows = try await connection.query(
            """
            SELECT (SELECT closes_at FROM like_windows WHERE post_id = \(post)), (SELECT username FROM people WHERE user_id = \(liked.userId))
            """,
            logger: logger
        )
        var open: Date?
        var username: String?
        for try await (closesAt, name) in rows.decode((Date?, String?).self) { (open, username) = (closesAt, name) }
        if let open, open > liked.likedAt {
            try await connection.query(
                "UPDATE like_windows SET likes = likes + 1, last_liker = \(liked.userId) WHERE post_id = \(post)",
                logger: logger
            )
            return 0
        }
        let closesAt = liked.likedAt.addingTimeInterval(window.seconds)
        try await connection.query(
            """
            INSERT INTO like_windows (post_id, author_id, closes_at, likes, last_liker) VALUES (\(post), \(author), \(closesAt), 0, NULL)
            ON CONFLICT (post_id) DO UPDATE SET closes_at = excluded.closes_at, likes = 0, last_liker = NULL
            """,
            logger: logger
        )
        let notification = NotificationPlanner.likes(on: post, author: author, liker: username, others: 0)
        return try await queue.enqueue([notification], about: occasion, on: connection)
    }

    /// Closes the windows whose time is up: those that gathered likes are pushed as one.
    /// - Returns: how many deliveries are due now.
    @discardableResult
    func closeDue(now: Date = Date()) async throws -> Int {
        try await client.withServiceTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM like_windows w WHERE w.post_id IN (
                    SELECT post_id FROM like_windows WHERE closes_at <= \(now) ORDER BY closes_at LIMIT 500 FOR UPDATE SKIP LOCKED
                )
                RETURNING w.post_id, w.author_id, w.closes_at, w.likes, (SELECT username FROM people WHERE user_id = w.last_liker)
                """,
                logger: logger
            )
            var due = 0
            for try await (post, author, closesAt, likes, username) in rows.decode((UUID, UUID, Date, Int, String?).self) where likes > 0 {
                let notification = NotificationPlanner.likes(on: post, author: author, liker: username, others: likes - 1)
                let occasion = Occasion(id: Self.windowID(post: post, closesAt: closesAt), type: "notify.likes.gathered", time: closesAt)
                due += try await queue.enqueue([notification], about: occasion, now: now, on: connection)
            }
            return due
        }
    }

    /// The id of a window's gathered push: the same for the same window, so a close run twice
    /// (two replicas, a retried transaction) makes one.
    static func windowID(post: UUID, closesAt: Date) -> UUID {
        UUID(derivedFrom: "notify:like-window:\(post.lowercased)/\(Int64(closesAt.timeIntervalSince1970 * 1_000))")
    }
}
