import DataAPI
import Foundation
import Identity
import Logging
import PostgresNIO
import ResourceAPI
import ServiceKit

/// social's tables under `/rest/v1`: `likes`, `collections`, `collection_photos` and `posts`,
/// and SplashEdit's own `liked_photos` (a view of its likes of Unsplash photos). `posts` also
/// answers to the Upload System's names (`author`, `media_key`). Reads run as the caller under the
/// schema's row-level security; every write is the typed API's domain function (its checks, its
/// outbox events), row by row.
struct SocialDataTables {
    let likes: LikeStore
    let collections: CollectionStore
    let posts: PostStore
    let read: DataReader

    init(client: PostgresClient, likes: LikeStore, collections: CollectionStore, posts: PostStore, logger: Logger) {
        self.likes = likes
        self.collections = collections
        self.posts = posts
        self.read = client.dataReader(logger: logger) { caller in
            caller.userID.map { [(name: "app.user_id", value: $0.lowercased)] } ?? []
        }
    }

    var tables: [DataTable] { [likesTable, likedPhotosTable, collectionsTable, collectionPhotosTable, postsTable] }

    // MARK: likes

    private var likesTable: DataTable {
        // The caller's own, said outright: row-level security's `OR acting_as_service()` keeps
        // Postgres from using the index on user_id, which this condition lets it use.
        let description = TableDescription(
            name: "likes",
            source: "(SELECT * FROM likes WHERE user_id = request_user_id()) likes",
            columns: [.init("user_id", .uuid, writable: true), .init("photo_key", .text, writable: true), .init("created_at", .timestamptz)],
            primaryKey: ["user_id", "photo_key"],
            defaultOrder: [.init(column: "created_at", descending: true)]
        )
        return DataTable(
            description,
            read: read,
            writes: DataWrites(
                insert: { [likes] rows, request in
                    let user = try Self.user(request.caller)
                    let keys = try rows.map { (row) throws -> PhotoKey in
                        try Self.checkOwner(row["user_id"], is: user, table: "likes")
                        guard let text = row["photo_key"]?.stringValue, let key = PhotoKey(text) else {
                            throw DataAPIError(.badRequest, code: "22023", message: "photo_key must be unsplash:<id>, edit:<uuid> or post:<uuid>")
                        }
                        return key
                    }
                    var written: [[String: JSONValue]] = []
                    for key in keys {
                        let (changed, _) = try await likes.like(key, user: user)
                        if !changed, request.onConflict == nil {
                            throw DataAPIError(
                                .conflict,
                                code: "23505",
                                message: "duplicate key value violates unique constraint \"likes_pkey\"",
                                details: "Key (user_id, photo_key)=(\(user.lowercased), \(key)) already exists."
                            )
                        }
                        if changed || request.resolution == .mergeDuplicates {
                            written.append(["user_id": .string(user.lowercased), "photo_key": .string(key.description)])
                        }
                    }
                    return written
                },
                delete: { [likes] key, caller in
                    guard let user = caller.userID, let text = key["photo_key"]?.stringValue, let photo = PhotoKey(text) else { return false }
                    return try await likes.unlike(photo, user: user)
                }
            )
        )
    }

    /// SplashEdit's `PhotoModel(id, user_id, unsplash_id, original_url, created_at)`: the caller's
    /// likes of Unsplash photos, each with its own id and the image URL it was liked with (the
    /// caller named outright, as in `likes`, for the index).
    private var likedPhotosTable: DataTable {
        let description = TableDescription(
            name: "liked_photos",
            source:
                """
                (SELECT id, user_id, substr(photo_key, 10) AS unsplash_id, original_url, created_at FROM likes
                 WHERE user_id = request_user_id() AND photo_key LIKE 'unsplash:%') liked_photos
                """,
            columns: [
                .init("id", .uuid, writable: true), .init("user_id", .uuid, writable: true), .init("unsplash_id", .text, writable: true),
                .init("original_url", .text, writable: true),
                // The app's model sends it back; the like keeps the time it was made.
                .init("created_at", .timestamptz, writable: true),
            ],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
        )
        return DataTable(
            description,
            read: read,
            writes: DataWrites(
                insert: { [likes, read] rows, request in
                    let user = try Self.user(request.caller)
                    var drafts: [(id: UUID, photo: String, url: String?)] = []
                    for row in rows {
                        try Self.checkOwner(row["user_id"], is: user, table: "liked_photos")
                        guard let photo = row["unsplash_id"]?.stringValue, case .unsplash? = PhotoKey("unsplash:" + photo) else {
                            throw DataAPIError(.badRequest, code: "23502", message: "unsplash_id must be an Unsplash photo's id")
                        }
                        let id = try Self.uuid(row["id"], column: "id") ?? UUID()
                        let url: String?
                        switch row["original_url"] {
                        case nil, .null?: url = nil
                        case .string(let text)?: url = text
                        default: throw DataAPIError(.badRequest, code: "22023", message: "original_url must be a URL")
                        }
                        drafts.append((id, photo, url))
                    }
                    for draft in drafts {
                        if let url = draft.url, try await !likes.photos.isImageURL(url, of: draft.photo) {
                            throw DataAPIError(
                                .badRequest,
                                code: "22023",
                                message: "original_url must be an https URL of Unsplash's images or one photo-catalog gave for this photo",
                                details: "\(url) is not an image of unsplash:\(draft.photo)"
                            )
                        }
                    }
                    var written: [[String: JSONValue]] = []
                    for draft in drafts {
                        let key = PhotoKey.unsplash(draft.photo)
                        let (changed, _) = try await likes.like(key, user: user, id: draft.id, originalURL: draft.url)
                        if changed {
                            written.append(["id": .string(draft.id.lowercased)])
                        } else if request.onConflict == nil {
                            throw DataAPIError(
                                .conflict,
                                code: "23505",
                                message: "duplicate key value violates unique constraint \"likes_pkey\"",
                                details: "Key (user_id, photo_key)=(\(user.lowercased), \(key)) already exists."
                            )
                        } else if request.resolution == .mergeDuplicates, let id = try await Self.likeID(of: key, caller: request.caller, read: read)
                        {
                            written.append(["id": .string(id.lowercased)])
                        }
                    }
                    return written
                },
                delete: { [likes, read] key, caller in
                    guard let user = caller.userID, let id = try Self.uuid(key["id"], column: "id") else { return false }
                    let rows = try await read(caller, ["SELECT photo_key FROM likes WHERE id = \(id)"])[0]
                    guard let text = try rows.first?.decode(String.self), let photo = PhotoKey(text) else { return false }
                    return try await likes.unlike(photo, user: user)
                }
            )
        )
    }

    /// The id of the caller's like of `key`.
    private static func likeID(of key: PhotoKey, caller: DataCaller, read: DataReader) async throws -> UUID? {
        try await read(caller, ["SELECT id FROM likes WHERE photo_key = \(key.description)"])[0].first?.decode(UUID.self)
    }

    // MARK: collections

    private var collectionsTable: DataTable {
        let description = TableDescription(
            name: "collections",
            source: "collections",
            columns: [
                .init("id", .uuid), .init("owner_id", .uuid, writable: true), .init("title", .text, writable: true),
                .init("description", .text, writable: true), .init("private", .boolean, writable: true),
                .init("created_at", .timestamptz), .init("updated_at", .timestamptz),
            ],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
        )
        return DataTable(
            description,
            read: read,
            writes: DataWrites(
                insert: { [collections] rows, request in
                    let user = try Self.user(request.caller)
                    let fields = try rows.map { (row) throws -> NewCollection in
                        try Self.checkOwner(row["owner_id"], is: user, table: "collections")
                        var body = JSONObject(fields: row, at: "")
                        return try NewCollection(reading: &body)
                    }
                    var written: [[String: JSONValue]] = []
                    for new in fields {
                        let outcome = try await collections.create(
                            user: user,
                            title: new.title,
                            description: new.description,
                            isPrivate: new.isPrivate
                        )
                        if case .created(let created) = outcome { written.append(["id": .string(created.id.lowercased)]) }
                    }
                    return written
                },
                update: { [collections] key, changes, caller in
                    guard let user = caller.userID, let id = key["id"]?.stringValue.flatMap(UUID.init(uuidString:)) else { return false }
                    try Self.checkOwner(changes["owner_id"], is: user, table: "collections")
                    var body = JSONObject(fields: changes, at: "")
                    let fields = try CollectionChange(reading: &body).fields
                    return try await Self.zeroRowsIfNotTheirs { _ = try await collections.update(id, user: user, fields: fields) }
                },
                delete: { [collections] key, caller in
                    guard let user = caller.userID, let id = key["id"]?.stringValue.flatMap(UUID.init(uuidString:)) else { return false }
                    return try await Self.zeroRowsIfNotTheirs { try await collections.delete(id, user: user) }
                }
            )
        )
    }

    private var collectionPhotosTable: DataTable {
        let description = TableDescription(
            name: "collection_photos",
            source: "collection_photos",
            columns: [.init("collection_id", .uuid, writable: true), .init("photo_key", .text, writable: true), .init("added_at", .timestamptz)],
            primaryKey: ["collection_id", "photo_key"],
            defaultOrder: [.init(column: "collection_id"), .init(column: "added_at")]
        )
        return DataTable(
            description,
            read: read,
            writes: DataWrites(
                insert: { [collections] rows, request in
                    let user = try Self.user(request.caller)
                    let pairs = try rows.map { (row) throws -> (UUID, PhotoKey) in
                        guard let id = row["collection_id"]?.stringValue.flatMap(UUID.init(uuidString:)) else {
                            throw DataAPIError(.badRequest, code: "22P02", message: "collection_id must be a uuid")
                        }
                        guard let text = row["photo_key"]?.stringValue, let key = PhotoKey(text) else {
                            throw DataAPIError(.badRequest, code: "22023", message: "photo_key must be unsplash:<id>, edit:<uuid> or post:<uuid>")
                        }
                        return (id, key)
                    }
                    var written: [[String: JSONValue]] = []
                    for (id, key) in pairs {
                        let added: Bool
                        do {
                            added = try await collections.add(key, to: id, user: user)
                        } catch let problem as Problem where problem.status == .forbidden {
                            throw DataAPIError.forbidden("new row violates row-level security policy for table \"collection_photos\"")
                        }
                        if !added, request.onConflict == nil {
                            throw DataAPIError(
                                .conflict,
                                code: "23505",
                                message: "duplicate key value violates unique constraint \"collection_photos_pkey\""
                            )
                        }
                        if added || request.resolution == .mergeDuplicates {
                            written.append(["collection_id": .string(id.lowercased), "photo_key": .string(key.description)])
                        }
                    }
                    return written
                },
                delete: { [collections] key, caller in
                    guard let user = caller.userID, let id = key["collection_id"]?.stringValue.flatMap(UUID.init(uuidString:)),
                        let text = key["photo_key"]?.stringValue, let photo = PhotoKey(text)
                    else { return false }
                    return try await Self.zeroRowsIfNotTheirsOrUnchanged { try await collections.remove(photo, from: id, user: user) }
                }
            )
        )
    }

    // MARK: posts

    private var postsTable: DataTable {
        // A post's photo, for the apps: the object it is (`posts/<path>`), or null for an Unsplash
        // photo. The Upload System calls the author `author` and the object `media_key`, given
        // with or without the bucket's prefix.
        let author = TableDescription.Column("user_id", .uuid, writable: true)
        let object = TableDescription.Column("object_key", .text, writable: true) { $0.hasPrefix("posts/") ? $0 : "posts/" + $0 }
        let description = TableDescription(
            name: "posts",
            source:
                "(SELECT p.id, p.user_id, p.caption, 'posts/' || o.name AS object_key, p.photo_key, p.created_at FROM posts p LEFT JOIN objects o ON o.id = p.object_id) posts",
            columns: [
                .init("id", .uuid, writable: true), author, .alias("author", of: author), .init("caption", .text, writable: true),
                object, .alias("media_key", of: object), .init("photo_key", .text), .init("created_at", .timestamptz),
            ],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
        )
        return DataTable(
            description,
            read: read,
            writes: DataWrites(
                insert: { [posts] rows, request in
                    let user = try Self.user(request.caller)
                    let drafts = try rows.map { (row) throws -> (PhotoRef, String, [UInt8], UUID?) in
                        try Self.checkOwner(row["user_id"], is: user, table: "posts")
                        let id = try Self.uuid(row["id"], column: "id")
                        var body = JSONObject(fields: row, at: "")
                        let caption = body.text("caption", required: false, maxCharacters: PostStore.maxCaption) ?? ""
                        let named = body.text("object_key", required: true, maxCharacters: 1_100, allowEmpty: false)
                        let objectKey = try body.validated(named)
                        return (.object(objectKey), caption, Array((try? JSONEncoder().encode(row)) ?? Data()), id)
                    }
                    var written: [[String: JSONValue]] = []
                    for (photo, caption, bytes, id) in drafts {
                        // Each row is a post of its own: a fresh key, so no two rows are taken for a retry.
                        let outcome = try await posts.create(
                            photo,
                            caption: caption,
                            user: user,
                            idempotency: IdempotencyKey(key: UUID().uuidString, body: bytes),
                            id: id
                        )
                        switch outcome {
                        case .created(let post), .replayed(let post): written.append(["id": .string(post.id.lowercased)])
                        case .keyReused: break
                        }
                    }
                    return written
                },
                delete: { [posts] key, caller in
                    guard let user = caller.userID, let id = key["id"]?.stringValue.flatMap(UUID.init(uuidString:)) else { return false }
                    return try await Self.zeroRowsIfNotTheirs { try await posts.delete(id, user: user) }
                }
            )
        )
    }

    // MARK: Rules

    /// The signed-in caller; an anonymous one writes nothing (401, as PostgREST's anon role).
    private static func user(_ caller: DataCaller) throws(DataAPIError) -> UUID {
        guard let user = caller.userID else {
            throw DataAPIError(.unauthorized, code: "42501", message: "permission denied: sign in to write")
        }
        return user
    }

    /// A UUID column's value in a body: `nil` when absent or null.
    /// - Throws: 400 22P02 for anything but a UUID.
    private static func uuid(_ value: JSONValue?, column: String) throws(DataAPIError) -> UUID? {
        guard let value, value != .null else { return nil }
        guard let text = value.stringValue, let id = UUID(uuidString: text) else {
            throw DataAPIError(
                .badRequest,
                code: "22P02",
                message: "invalid input syntax for type uuid: \"\(SQLRenderer.text(value) ?? "")\"",
                details: column
            )
        }
        return id
    }

    /// A row's owner column, when given, must be the caller: 403 42501 otherwise, as row-level
    /// security's check refuses a row for someone else.
    private static func checkOwner(_ value: JSONValue?, is user: UUID, table: String) throws(DataAPIError) {
        guard let value, value != .null else { return }
        guard let text = value.stringValue, let owner = UUID(uuidString: text), owner == user else {
            throw DataAPIError.forbidden("new row violates row-level security policy for table \"\(table)\"")
        }
    }

    /// A row the caller can see but not change is not there for them: 0 rows, not an error.
    private static func zeroRowsIfNotTheirs(_ work: () async throws -> Void) async throws -> Bool {
        try await zeroRowsIfNotTheirsOrUnchanged {
            try await work()
            return true
        }
    }

    /// As `zeroRowsIfNotTheirs`, for a change that tells whether it changed a row.
    private static func zeroRowsIfNotTheirsOrUnchanged(_ work: () async throws -> Bool) async throws -> Bool {
        do {
            return try await work()
        } catch let problem as Problem where problem.status == .forbidden || problem.status == .notFound {
            return false
        }
    }
}
