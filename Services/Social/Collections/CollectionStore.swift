import Contracts
import Database
import EventBus
import Foundation
import Logging
import PostgresNIO
import ResourceAPI
import ServiceAssembly
import ServiceKit

/// Named collections and their photos. A private collection is its owner's alone (404 to anyone
/// else); a public one is readable by anyone signed in and changed by its owner only (403).
/// Every change is one transaction with its `social.collection.changed.v1`.
struct CollectionStore: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let photos: PhotoResolver
    let logger: Logger

    struct Fields: Sendable {
        var title: String?
        var description: String?
        var isPrivate: Bool?
    }

    static let notFound = Problem(status: .notFound, type: "not-found", title: "Not found", detail: "No such collection, or not one you may see.")
    static let notYours = Problem(status: .forbidden, type: "forbidden", title: "Forbidden", detail: "Only the collection's owner may change it.")

    private static let columns =
        "id, owner_id, title, description, private, created_at, updated_at, (SELECT count(*) FROM collection_photos p WHERE p.collection_id = collections.id), version"

    private static func collection(_ row: PostgresRow) throws -> PhotoCollection {
        let (id, owner, title, description, isPrivate, created, updated, count, version) = try row.decode(
            (UUID, UUID, String, String, Bool, Date, Date, Int, Int).self
        )
        return PhotoCollection(
            id: id,
            ownerID: owner,
            title: title,
            description: description,
            isPrivate: isPrivate,
            photoCount: count,
            createdAt: created,
            updatedAt: updated,
            version: version
        )
    }

    /// Makes a collection of `user`'s; with `idempotency`, once per key (a retry gets the
    /// collection the first request made).
    func create(
        user: UUID,
        title: String,
        description: String,
        isPrivate: Bool,
        idempotency: IdempotencyKey? = nil
    ) async throws -> IdempotencyKey.Outcome<PhotoCollection> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            if let idempotency {
                // Two requests with one key take turns here; the second finds the first's.
                try await connection.query(
                    "SELECT pg_advisory_xact_lock(hashtextextended(\(user.lowercased + "\ncollection\n" + idempotency.key), 0))",
                    logger: logger
                )
                let earlier = try await connection.query(
                    "SELECT \(unescaped: Self.columns), request_hash FROM collections WHERE owner_id = \(user) AND idempotency_key = \(idempotency.key)",
                    logger: logger
                ).collect().first
                if let earlier {
                    let hash = try earlier.makeRandomAccess()[9].decode(String.self)
                    return hash == idempotency.requestHash ? .replayed(try Self.collection(earlier)) : .keyReused
                }
            }
            let row = try await connection.query(
                """
                INSERT INTO collections (id, owner_id, title, description, private, idempotency_key, request_hash)
                VALUES (\(UUID()), \(user), \(title), \(description), \(isPrivate), \(idempotency?.key), \(idempotency?.requestHash))
                RETURNING \(unescaped: Self.columns)
                """,
                logger: logger
            ).collect()[0]
            let created = try Self.collection(row)
            try await changed(created, .created, user: user, on: connection)
            return .created(created)
        }
    }

    /// The collection, if `user` may see it.
    func collection(_ id: UUID, user: UUID) async throws -> PhotoCollection? {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await visible(id, on: connection)
        }
    }

    private func visible(_ id: UUID, on connection: PostgresConnection) async throws -> PhotoCollection? {
        try await connection.query("SELECT \(unescaped: Self.columns) FROM collections WHERE id = \(id)", logger: logger).collect().first.map(
            Self.collection
        )
    }

    /// The collection, if `user` owns it. - Throws: 404 when they may not see it, 403 when they see
    /// it but do not own it.
    private func owned(_ id: UUID, user: UUID, on connection: PostgresConnection) async throws -> PhotoCollection {
        guard let collection = try await visible(id, on: connection) else { throw Self.notFound }
        guard collection.ownerID == user else { throw Self.notYours }
        return collection
    }

    /// Changes the collection's fields; with `version`, only if it is still at that version.
    /// - Throws: 412 `version-mismatch` when it is not.
    func update(_ id: UUID, user: UUID, fields: Fields, expecting version: Int? = nil) async throws -> PhotoCollection {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            _ = try await owned(id, user: user, on: connection)
            // The version checked by the change itself, so no other change comes in between.
            let rows = try await connection.query(
                """
                UPDATE collections SET title = coalesce(\(fields.title), title), description = coalesce(\(fields.description), description),
                    private = coalesce(\(fields.isPrivate), private), version = version + 1, updated_at = clock_timestamp()
                WHERE id = \(id) AND (\(version == nil) OR version = \(version ?? 0)) RETURNING \(unescaped: Self.columns)
                """,
                logger: logger
            ).collect()
            guard let row = rows.first else { throw Problem.stale(current: try await owned(id, user: user, on: connection).version) }
            let updated = try Self.collection(row)
            try await changed(updated, .updated, user: user, on: connection)
            return updated
        }
    }

    func delete(_ id: UUID, user: UUID) async throws {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let collection = try await owned(id, user: user, on: connection)
            try await connection.query("DELETE FROM collections WHERE id = \(id)", logger: logger)
            try await changed(collection, .deleted, user: user, on: connection)
        }
    }

    /// The collections of `owner` that `user` may see, newest first; with `since`, the ones
    /// created or changed after that answer (a photo added or taken out changes its collection)
    /// and the ids of those deleted (`DeltaSync`). A sync is of one's own collections.
    func collections(of owner: UUID, user: UUID, sync request: SyncRequest) async throws -> SyncPage<PhotoCollection> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let token = try await connection.syncToken(request.pinned, list: "collections", owner: owner.lowercased, logger: logger)
            let limit = request.limit + 1
            let rows: [PostgresRow]
            if let since = request.since {
                let after = try request.syncPosition()
                rows = try await connection.query(
                    """
                    SELECT \(unescaped: Self.columns), sync_xid::text FROM collections
                    WHERE owner_id = \(owner)
                      AND \(changedAfter: since)
                      AND (\(after == nil) OR (sync_xid, id::text) > (\(after?.xid ?? "0")::xid8, \(after?.key ?? "")))
                    ORDER BY sync_xid, id::text LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            } else if let cursor = request.cursor, let id = cursor.id {
                rows = try await connection.query(
                    """
                    SELECT \(unescaped: Self.columns), sync_xid::text FROM collections WHERE owner_id = \(owner) AND (created_at, id) < (\(ExactTimestamp(microseconds: cursor.microseconds)), \(id))
                    ORDER BY created_at DESC, id DESC LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            } else {
                rows = try await connection.query(
                    """
                    SELECT \(unescaped: Self.columns), sync_xid::text FROM collections WHERE owner_id = \(owner) ORDER BY created_at DESC, id DESC LIMIT \(limit)
                    """,
                    logger: logger
                ).collect()
            }
            let found = try rows.map { row in (try Self.collection(row), try row.makeRandomAccess()[9].decode(String.self)) }
            let (items, next) = request.page(of: found, token: token) { collection, xid in
                request.since == nil
                    ? PageCursor(time: collection.createdAt, id: collection.id) : SyncRequest.position(xid: xid, key: collection.id.lowercased)
            }
            let deleted = try await connection.syncDeleted(list: "collections", owner: owner, request: request, logger: logger)
            return SyncPage(items: items.map(\.0), deleted: deleted, nextCursor: next, syncToken: token)
        }
    }

    /// Adds `key` to the collection; `false` when it was there already. Collecting an Unsplash
    /// photo is a use of it, reported to photo-catalog.
    func add(_ key: PhotoKey, to id: UUID, user: UUID) async throws -> Bool {
        let added = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let collection = try await owned(id, user: user, on: connection)
            let inserted = try await connection.query(
                """
                INSERT INTO collection_photos (collection_id, photo_key) VALUES (\(id), \(key.description)) ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).collect()
            guard !inserted.isEmpty else { return false }
            try await photos.checkUsable(key, on: connection)
            try await changed(collection, .added, photo: key, user: user, on: connection)
            return true
        }
        if added, case .unsplash(let photo) = key { await photos.catalog.reportUse(photo: photo, user: user) }
        return added
    }

    /// Removes `key` from the collection; `false` when it was not there.
    func remove(_ key: PhotoKey, from id: UUID, user: UUID) async throws -> Bool {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let collection = try await owned(id, user: user, on: connection)
            let deleted = try await connection.query(
                """
                DELETE FROM collection_photos WHERE collection_id = \(id) AND photo_key = \(key.description) RETURNING 1
                """,
                logger: logger
            ).collect()
            guard !deleted.isEmpty else { return false }
            try await changed(collection, .removed, photo: key, user: user, on: connection)
            return true
        }
    }

    /// The collection's photos in the order they were added.
    /// - Throws: 404 when `user` may not see the collection.
    func photos(of id: UUID, user: UUID, page: PageRequest) async throws -> Page<CollectedPhoto> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            guard try await visible(id, on: connection) != nil else { throw Self.notFound }
            let rows =
                if let cursor = page.cursor {
                    try await connection.query(
                        """
                        SELECT photo_key, added_at FROM collection_photos WHERE collection_id = \(id) AND (added_at, photo_key) > (\(ExactTimestamp(microseconds: cursor.microseconds)), \(cursor.key))
                        ORDER BY added_at, photo_key LIMIT \(page.limit + 1)
                        """,
                        logger: logger
                    ).collect()
                } else {
                    try await connection.query(
                        """
                        SELECT photo_key, added_at FROM collection_photos WHERE collection_id = \(id) ORDER BY added_at, photo_key LIMIT \(page.limit + 1)
                        """,
                        logger: logger
                    ).collect()
                }
            let entries = try rows.compactMap { row -> (PhotoKey, String, Date)? in
                let (text, at) = try row.decode((String, Date).self)
                return PhotoKey(text).map { ($0, text, at) }
            }
            let (items, next) = page.page(of: entries) { PageCursor(time: $0.2, key: $0.1) }
            let shown = try await photos.shown(items.map(\.0), on: connection)
            return Page(items: zip(items, shown).map { CollectedPhoto(key: $0.1, addedAt: $0.2, photo: $1) }, nextCursor: next)
        }
    }

    private func changed(
        _ collection: PhotoCollection,
        _ change: CollectionChanged.Change,
        photo: PhotoKey? = nil,
        user: UUID,
        on connection: PostgresConnection
    ) async throws {
        let event = CollectionChanged(
            userId: user,
            collectionId: collection.id,
            change: change,
            photoId: photo?.description,
            private: collection.isPrivate,
            changedAt: Date()
        )
        try await outbox.append(event, subject: user.lowercased, on: connection, logger: logger)
    }
}
