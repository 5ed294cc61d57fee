import Contracts
import Database
import EventBus
import Foundation
import Logging
import PostgresNIO
import ResourceAPI
import ServiceAssembly

/// Likes and their counts. A like and its event are one transaction; the count is kept by the
/// `likes_counted` trigger in it, so concurrent toggles of one photo end with the exact count and
/// one event per real change (a repeated like or unlike changes nothing and publishes nothing).
struct LikeStore: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let photos: PhotoResolver
    let logger: Logger

    struct State: Sendable, Equatable {
        var count: Int
        var likedByMe: Bool
    }

    /// Likes `key` for `user`; `changed` is false when it was liked already. A new like of an
    /// Unsplash photo is reported to photo-catalog as a use (Unsplash's rule).
    ///
    /// One statement (`like_photo`, the schema's): the check, the row, its event and the count in
    /// one round trip; a post's like names its author in the event (`ownerId`, added by the
    /// statement, which finds the post). An Unsplash photo not described here yet is liked in a
    /// transaction that first asks photo-catalog about it. `id` and `originalURL` are what an
    /// app's own table gives a new like (`liked_photos`): its id (else one is made) and the image
    /// URL it was liked with.
    /// - Throws: 404 `photo-not-found` for a photo the user may not like; a database 23505 for an
    ///   `id` another like has.
    func like(_ key: PhotoKey, user: UUID, id: UUID? = nil, originalURL: String? = nil) async throws -> (changed: Bool, state: State) {
        let at = Date()
        let (event, topic) = try outbox.row(PhotoLiked(userId: user, photoId: key.description, likedAt: at), subject: user.lowercased, time: at)
        let row = try await client.query(
            """
            SELECT outcome, likes FROM like_photo(\(user), \(key.description), \(at), \(event.id), \(topic), \(event.key), \(event.type), \(event.source), \(event.subject), \(Data(event.data)), \(id), \(originalURL))
            """,
            logger: logger
        ).collect().first("like_photo's outcome")
        let (outcome, likes) = try row.decode((String, Int).self)
        switch outcome {
        case "liked":
            try await outbox.committed(on: client, logger: logger)
            if case .unsplash(let photo) = key { await photos.catalog.reportUse(photo: photo, user: user) }
            return (true, State(count: likes, likedByMe: true))
        case "already":
            return (false, State(count: likes, likedByMe: true))
        case "not-found":
            throw PhotoResolver.notFound
        default:
            return try await likeDescribingFirst(key, user: user, id: id, originalURL: originalURL)
        }
    }

    /// `like` for an Unsplash photo not described here yet: photo-catalog is asked about it within
    /// the like's transaction.
    private func likeDescribingFirst(_ key: PhotoKey, user: UUID, id: UUID?, originalURL: String?) async throws -> (changed: Bool, state: State) {
        let liked: (changed: Bool, state: State) = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO likes (user_id, photo_key, id, original_url) VALUES (\(user), \(key.description), \(id ?? UUID()), \(originalURL))
                ON CONFLICT (user_id, photo_key) DO NOTHING RETURNING created_at
                """,
                logger: logger
            ).collect().first.map { try $0.decode(Date.self) }
            if let likedAt = inserted {
                // Checked only for a new like: the check may ask photo-catalog once.
                try await photos.checkUsable(key, on: connection)
                try await outbox.append(
                    PhotoLiked(userId: user, photoId: key.description, likedAt: likedAt),
                    subject: user.lowercased,
                    on: connection,
                    logger: logger
                )
            }
            return (inserted != nil, State(count: try await count(key, on: connection), likedByMe: true))
        }
        if liked.changed, case .unsplash(let photo) = key { await photos.catalog.reportUse(photo: photo, user: user) }
        return liked
    }

    /// Takes the like back; `changed` is false when there was none. One statement
    /// (`unlike_photo`): the row and its event in one round trip.
    func unlike(_ key: PhotoKey, user: UUID) async throws -> Bool {
        let at = Date()
        let (event, topic) = try outbox.row(PhotoUnliked(userId: user, photoId: key.description, unlikedAt: at), subject: user.lowercased, time: at)
        let changed = try await client.query(
            """
            SELECT unlike_photo(\(user), \(key.description), \(at), \(event.id), \(topic), \(event.key), \(event.type), \(event.source), \(event.subject), \(Data(event.data)))
            """,
            logger: logger
        ).collect().first("unlike_photo's outcome").decode(Bool.self)
        if changed { try await outbox.committed(on: client, logger: logger) }
        return changed
    }

    func state(_ key: PhotoKey, user: UUID) async throws -> State {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let mine = try await connection.query("SELECT 1 FROM likes WHERE user_id = \(user) AND photo_key = \(key.description)", logger: logger)
                .collect()
            return State(count: try await count(key, on: connection), likedByMe: !mine.isEmpty)
        }
    }

    private func count(_ key: PhotoKey, on connection: PostgresConnection) async throws -> Int {
        try await connection.query("SELECT likes FROM like_counts WHERE photo_key = \(key.description)", logger: logger)
            .collect().first.map { try $0.decode(Int.self) } ?? 0
    }

    /// "My Collection": the user's likes, newest first, with each photo's data; with `since`,
    /// the likes made after that answer and the photo keys unliked (`DeltaSync`).
    func liked(by user: UUID, sync request: SyncRequest) async throws -> SyncPage<LikedPhoto> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let token = try await connection.syncToken(request.pinned, list: "likes", owner: user.lowercased, logger: logger)
            let limit = request.limit + 1
            let rows: [PostgresRow]
            if let since = request.since {
                let after = try request.syncPosition()
                rows = try await connection.query(
                    """
                    SELECT photo_key, created_at, sync_xid::text FROM likes
                    WHERE user_id = \(user)
                      AND \(changedAfter: since)
                      AND (\(after == nil) OR (sync_xid, photo_key) > (\(after?.xid ?? "0")::xid8, \(after?.key ?? "")))
                    ORDER BY sync_xid, photo_key LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            } else if let cursor = request.cursor {
                rows = try await connection.query(
                    """
                    SELECT photo_key, created_at, sync_xid::text FROM likes WHERE user_id = \(user) AND (created_at, photo_key) < (\(ExactTimestamp(microseconds: cursor.microseconds)), \(cursor.key))
                    ORDER BY created_at DESC, photo_key DESC LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            } else {
                rows = try await connection.query(
                    """
                    SELECT photo_key, created_at, sync_xid::text FROM likes WHERE user_id = \(user) ORDER BY created_at DESC, photo_key DESC LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            }
            let likes = try rows.compactMap { row -> (PhotoKey, String, Date, String)? in
                let (text, at, xid) = try row.decode((String, Date, String).self)
                return PhotoKey(text).map { ($0, text, at, xid) }
            }
            let (items, next) = request.page(of: likes, token: token) { like in
                request.since == nil ? PageCursor(time: like.2, key: like.1) : SyncRequest.position(xid: like.3, key: like.1)
            }
            let shown = try await photos.shown(items.map(\.0), on: connection)
            let deleted = try await connection.syncDeleted(list: "likes", owner: user, request: request, logger: logger)
            return SyncPage(
                items: zip(items, shown).map { LikedPhoto(photo: $1, likedAt: $0.2) },
                deleted: deleted,
                nextCursor: next,
                syncToken: token
            )
        }
    }
}
