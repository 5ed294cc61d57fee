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
import ServiceAssembly
import ServiceKit

/// Posts: creating one (with its image made to fit), reading the feed and an author's posts,
/// deleting one.
///
/// A post's image is an Unsplash photo (hotlinked, never re-hosted) or an object of the posts
/// bucket attached to it: the user's upload, or a copy of their edit (so the post does not depend
/// on the edit staying in edit-render). The image is re-encoded, to fit 1080 px and 2 MB and
/// without its metadata, before the post is recorded. The post row, the object's `attached` mark and
/// `social.post.created.v1` are one transaction; the object is deleted after the post's row.
struct PostStore: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let objects: ObjectStore
    let catalog: PhotoCatalogClient
    let photos: PhotoResolver
    let renderer: Renderer
    let logger: Logger

    /// The longest edge and byte count an image may have to be posted as it is.
    static let fit = (edge: 1080, bytes: 2 << 20)
    static let maxCaption = 2_200

    static let notFound = Problem(status: .notFound, type: "not-found", title: "Not found", detail: "No such post.")
    static let notYours = Problem(status: .forbidden, type: "forbidden", title: "Forbidden", detail: "Only the post's author may delete it.")

    // MARK: Creating

    /// The image a post will show, once resolved and made to fit.
    private enum Media {
        case unsplash(url: String, width: Int, height: Int)
        /// An object to attach: an existing pending upload (`replacing` its blob when re-encoded)
        /// or a new copy of an edit.
        case object(path: ObjectPath, existing: UUID?, key: BlobKey, size: Int, mime: String, width: Int, height: Int, replaced: BlobKey?)
    }

    /// Posts `photo` for `user`, once per idempotency key; `chosen` is the post's id when the app
    /// picked it first (its upload's path names it), else one is made.
    /// - Throws: a database 23505 when `chosen` is a post's id already.
    func create(
        _ photo: PhotoRef,
        caption: String,
        user: UUID,
        idempotency: IdempotencyKey,
        id chosen: UUID? = nil
    ) async throws -> IdempotencyKey.Outcome<Post> {
        if let earlier = try await earlier(user: user, idempotency: idempotency) { return earlier }
        let id = chosen ?? UUID()
        let photoKey: PhotoKey
        let media: Media
        switch photo {
        case .unsplash(let photoID):
            photoKey = .unsplash(photoID)
            media = try await unsplash(photoID)
        case .edit(let edit):
            photoKey = .edit(edit)
            media = try await editCopy(edit, user: user, post: id)
        case .object(let key):
            photoKey = .post(id)
            media = try await upload(key, user: user)
        }
        // A blob this request wrote: an edit's copy, or an upload re-encoded to fit.
        let newBlob: BlobKey? =
            if case .object(_, let existing, let key, _, _, _, _, let replaced) = media, existing == nil || replaced != nil { key } else { nil }
        do {
            let outcome = try await record(
                id: id,
                photo: photo,
                photoKey: photoKey,
                media: media,
                caption: caption,
                user: user,
                idempotency: idempotency
            )
            if case .created = outcome {
                if case .object(_, _, _, _, _, _, _, let replaced?) = media { await objects.deleteBlob(replaced) }
                if case .unsplash(let photoID) = photo { await catalog.reportUse(photo: photoID, user: user) }
            } else if let newBlob {
                await objects.deleteBlob(newBlob)
            }
            return outcome
        } catch {
            if let newBlob { await objects.deleteBlob(newBlob) }
            throw error
        }
    }

    /// What an earlier request with the same key made, if any.
    private func earlier(user: UUID, idempotency: IdempotencyKey) async throws -> IdempotencyKey.Outcome<Post>? {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await earlier(user: user, idempotency: idempotency, on: connection)
        }
    }

    private func earlier(user: UUID, idempotency: IdempotencyKey, on connection: PostgresConnection) async throws -> IdempotencyKey.Outcome<Post>? {
        let rows = try await connection.query(
            """
            SELECT id, request_hash FROM posts WHERE user_id = \(user) AND idempotency_key = \(idempotency.key)
            """,
            logger: logger
        ).collect()
        guard let (id, hash) = try rows.first?.decode((UUID, String).self) else { return nil }
        guard hash == idempotency.requestHash, let post = try await posts(.one(id), viewer: user, limit: 1, on: connection).first else {
            return .keyReused
        }
        return .replayed(post)
    }

    private func unsplash(_ id: String) async throws -> Media {
        let photo: CatalogPhoto
        do throws(PhotoCatalogClient.LookupError) {
            photo = try await catalog.photo(id)
        } catch {
            switch error {
            case .notFound:
                throw Problem.validation([FieldError(.body(pointer: "/photo/unsplashPhotoId"), "photo.unsplashPhotoId: Unsplash has no photo \(id)")])
            case .unavailable:
                throw Problem(
                    status: .serviceUnavailable,
                    type: "catalog-unavailable",
                    title: "Photo catalog unavailable",
                    detail: "The photo could not be looked up just now; try again.",
                    headers: [.retryAfter: "2"]
                )
            }
        }
        guard let url = photo.urls["regular"] ?? photo.urls["full"] else {
            throw Problem.validation([
                FieldError(.body(pointer: "/photo/unsplashPhotoId"), "photo.unsplashPhotoId: Unsplash gives no image for \(id)")
            ])
        }
        try await client.withServiceTransaction(logger: logger) { connection in try await PhotoResolver.keep(photo, on: connection, logger: logger) }
        // `regular` is 1080 wide (never wider than the original).
        let (width, height) = (photo.width ?? 1080, photo.height ?? 1080)
        let shown = min(width, Self.fit.edge)
        return .unsplash(url: url, width: shown, height: max(1, Int((Double(height) * Double(shown) / Double(max(width, 1))).rounded())))
    }

    /// A copy of the user's completed edit, as a new object of theirs in the posts bucket.
    private func editCopy(_ edit: UUID, user: UUID, post: UUID) async throws -> Media {
        let notUsable = Problem.validation([
            FieldError(.body(pointer: "/photo/editId"), "photo.editId: no completed edit \(edit.lowercased) of yours")
        ])
        let found = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query("SELECT format FROM edits WHERE edit_id = \(edit) AND user_id = \(user)", logger: logger)
                .collect().first.map { try $0.decode(String.self) }
        }
        guard let format = found, let bytes = try await objects.blobs.get(.edited(user: user, edit: edit, format: format)) else { throw notUsable }
        let path = try ObjectPath(bucket: .posts, name: "\(user.lowercased)/post-\(post.lowercased).\(format == "jpeg" ? "jpg" : format)")
        return try await stored(bytes, for: path, existing: nil)
    }

    /// The user's pending upload named by `posts/{name}`.
    private func upload(_ objectKey: String, user: UUID) async throws -> Media {
        let field = FieldError.Location.body(pointer: "/photo/objectKey")
        guard objectKey.hasPrefix("posts/"), let path = try? ObjectPath(bucket: .posts, name: String(objectKey.dropFirst("posts/".count))) else {
            throw Problem.validation([FieldError(field, "photo.objectKey: posts/{your user id}/{file name}, an object you uploaded")])
        }
        _ = try path.ownedBy(user)
        guard let object = try await objects.object(path, user: user), object.path.owner == user else {
            throw Problem.validation([FieldError(field, "photo.objectKey: no object \(objectKey) of yours")])
        }
        guard object.state == .pending else { throw Self.attached }
        // Re-encoded whatever its size (`stored`): as uploaded, it is its owner's alone.
        guard let bytes = try await objects.bytes(of: object) else {
            throw Problem.validation([FieldError(field, "photo.objectKey: the object no longer exists")])
        }
        var media = try await stored(bytes, for: path, existing: object.id)
        if case .object(let path, let existing, let key, let size, let mime, let width, let height, _) = media {
            media = .object(path: path, existing: existing, key: key, size: size, mime: mime, width: width, height: height, replaced: object.blobKey)
        }
        return media
    }

    static let attached = Problem(
        status: .conflict,
        type: "object-attached",
        title: "Object already posted",
        detail: "This upload is already the photo of a post; upload it again to post it again."
    )

    /// `bytes` re-encoded to fit (1080 px, 2 MB) without metadata, written under a new
    /// blob key listed as an upload until the post's transaction records it.
    private func stored(_ bytes: [UInt8], for path: ObjectPath, existing: UUID?) async throws -> Media {
        // Always re-encoded: everyone signed in sees a post's photo, and what a camera wrote into
        // it (a location) is not theirs to read; HEIF and AVIF become JPEG, which every phone shows.
        let rendered: RenderedImage
        do {
            rendered = try await renderer.render(
                bytes,
                filters: .none,
                output: OutputRules(format: .jpeg, longestEdge: Self.fit.edge),
                limits: SourceLimits(maxBytes: objects.maxBytes)
            )
        } catch let error as ImagingError {
            throw Problem(status: .unprocessableContent, type: "unsupported-image", title: "Not a photo", detail: "\(error)")
        }
        let (image, width, height, mime) = (rendered.bytes, rendered.width, rendered.height, rendered.mediaType)
        let key = BlobKey(segments: [path.bucket.rawValue, path.owner.lowercased, UUID().lowercased])!
        try await objects.intend(.upload, key)
        try await objects.blobs.put(key, bytes: image)
        return .object(path: path, existing: existing, key: key, size: image.count, mime: mime, width: width, height: height, replaced: nil)
    }

    private func record(
        id: UUID,
        photo: PhotoRef,
        photoKey: PhotoKey,
        media: Media,
        caption: String,
        user: UUID,
        idempotency: IdempotencyKey
    ) async throws -> IdempotencyKey.Outcome<Post> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            // Two requests with one key take turns here; the second finds the first's post.
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended(\(user.lowercased + "\n" + idempotency.key), 0))",
                logger: logger
            )
            if let earlier = try await earlier(user: user, idempotency: idempotency, on: connection) { return earlier }
            var objectID: UUID?
            var unsplashURL: String?
            let width: Int
            let height: Int
            switch media {
            case .unsplash(let url, let w, let h):
                (unsplashURL, width, height) = (url, w, h)
            case .object(let path, let existing, let key, let size, let mime, let w, let h, let replaced):
                (width, height) = (w, h)
                if let existing {
                    let state = try await connection.query("SELECT state FROM objects WHERE id = \(existing) FOR UPDATE", logger: logger)
                        .collect().first.map { try $0.decode(String.self) }
                    guard let state else {
                        throw Problem.validation([FieldError(.body(pointer: "/photo/objectKey"), "photo.objectKey: the object no longer exists")])
                    }
                    guard state == StoredObject.State.pending.rawValue else { throw Self.attached }
                    try await connection.query(
                        """
                        UPDATE objects SET state = 'attached', blob_key = \(key.path), size = \(size), mime_type = \(mime), width = \(w), height = \(h), updated_at = clock_timestamp()
                        WHERE id = \(existing)
                        """,
                        logger: logger
                    )
                    try await ObjectStore.intend(.delete, replaced, on: connection, logger: logger)
                    objectID = existing
                } else {
                    let object = UUID()
                    try await connection.query(
                        """
                        INSERT INTO objects (id, bucket, name, owner_id, state, blob_key, size, mime_type, width, height)
                        VALUES (\(object), \(path.bucket.rawValue), \(path.name), \(user), 'attached', \(key.path), \(size), \(mime), \(w), \(h))
                        """,
                        logger: logger
                    )
                    objectID = object
                }
                try await connection.query("DELETE FROM blob_intents WHERE blob_key = \(key.path)", logger: logger)
            }
            let created = try await connection.query(
                """
                INSERT INTO posts (id, user_id, photo, photo_key, object_id, unsplash_url, media_width, media_height, caption, idempotency_key, request_hash)
                VALUES (\(id), \(user), \(try JSONBody.text(photo))::jsonb, \(photoKey.description), \(objectID), \(unsplashURL), \(width), \(height),
                        \(caption), \(idempotency.key), \(idempotency.requestHash))
                RETURNING created_at
                """,
                logger: logger
            ).collect()[0].decode(Date.self)
            try await outbox.append(
                PostCreated(postId: id, userId: user, photoKey: photoKey.description, caption: caption, createdAt: created),
                subject: user.lowercased,
                on: connection,
                logger: logger
            )
            return .created(try await posts(.one(id), viewer: user, limit: 1, on: connection)[0])
        }
    }

    // MARK: Reading

    enum Selection {
        case feed(after: PageCursor?)
        case author(UUID, after: PageCursor?)
        case one(UUID)
    }

    /// One round trip: `FeedStatement` sets the viewer for row-level security in its own statement.
    func posts(_ selection: Selection, viewer: UUID, limit: Int) async throws -> [Post] {
        try await client.withConnection { connection in
            try await posts(selection, viewer: viewer, limit: limit, on: connection)
        }
    }

    /// The caller's own posts, newest first; with `since`, those made or changed after that
    /// answer and the ids of those deleted (`DeltaSync`).
    func authored(by user: UUID, sync request: SyncRequest) async throws -> SyncPage<Post> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let token = try await connection.syncToken(request.pinned, list: "posts", owner: user.lowercased, logger: logger)
            guard let since = request.since else {
                let rows = try await posts(.author(user, after: request.cursor), viewer: user, limit: request.limit + 1, on: connection)
                let (items, next) = request.page(of: rows, token: token) { PageCursor(time: $0.createdAt, id: $0.id) }
                return SyncPage(items: Array(items), deleted: [], nextCursor: next, syncToken: token)
            }
            let after = try request.syncPosition()
            let changed = try await connection.query(
                """
                SELECT id, sync_xid::text FROM posts
                WHERE user_id = \(user)
                  AND \(changedAfter: since)
                  AND (\(after == nil) OR (sync_xid, id::text) > (\(after?.xid ?? "0")::xid8, \(after?.key ?? "")))
                ORDER BY sync_xid, id::text LIMIT \(request.limit + 1)
                """,
                logger: logger
            ).collect().map { try $0.decode((UUID, String).self) }
            let (ids, next) = request.page(of: changed, token: token) { SyncRequest.position(xid: $0.1, key: $0.0.lowercased) }
            var items: [Post] = []
            for (id, _) in ids { items += try await posts(.one(id), viewer: user, limit: 1, on: connection) }
            let deleted = try await connection.syncDeleted(list: "posts", owner: user, request: request, logger: logger)
            return SyncPage(items: items, deleted: deleted, nextCursor: next, syncToken: token)
        }
    }

    /// The photo a post was made from, known from its photo key (an Unsplash photo, an edit) or its
    /// object (an upload: the object the post attached, under the name it was uploaded as).
    static func photoRef(key: String, objectName: String?, id: UUID) throws -> PhotoRef {
        switch PhotoKey(key) {
        case .unsplash(let photo)?: return .unsplash(photo)
        case .edit(let edit)?: return .edit(edit)
        case .post?:
            guard let objectName else { throw UnreadableRow(table: "posts", id: id) }
            return .object("posts/\(objectName)")
        case nil: throw UnreadableRow(table: "posts", id: id)
        }
    }

    /// Where a page after `cursor` starts: the last post's time and id (none for a first page, or
    /// a cursor not keyed by a post's id).
    private static func position(after cursor: PageCursor?) -> (ExactTimestamp, UUID)? {
        guard let cursor, let id = cursor.id else { return nil }
        return (ExactTimestamp(microseconds: cursor.microseconds), id)
    }

    private func read<Variant>(_ statement: FeedStatement<Variant>, on connection: PostgresConnection) async throws -> [FeedStatement<Variant>.Row] {
        var rows: [FeedStatement<Variant>.Row] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }

    /// Posts newest first, as `FeedStatement` reads them, with their media links signed.
    func posts(_ selection: Selection, viewer: UUID, limit: Int, on connection: PostgresConnection, now: Date = Date()) async throws -> [Post] {
        let rows: [FeedStatement<FeedFirstPage>.Row]
        switch selection {
        case .one(let id):
            rows = try await read(FeedStatement<OnePost>(viewer: viewer, [id, limit]), on: connection)
        case .feed(let cursor):
            if let (time, id) = Self.position(after: cursor) {
                rows = try await read(FeedStatement<FeedLaterPage>(viewer: viewer, [time, id, limit]), on: connection)
            } else {
                rows = try await read(FeedStatement<FeedFirstPage>(viewer: viewer, [limit]), on: connection)
            }
        case .author(let author, let cursor):
            if let (time, id) = Self.position(after: cursor) {
                rows = try await read(FeedStatement<AuthorLaterPage>(viewer: viewer, [author, time, id, limit]), on: connection)
            } else {
                rows = try await read(FeedStatement<AuthorFirstPage>(viewer: viewer, [author, limit]), on: connection)
            }
        }
        let expires = photos.storageLinks.expiry(lifetime: Int(photos.mediaLifetime.components.seconds), now: now)
        return try rows.map { row in
            let (id, author, username, avatar, key, caption, unsplashURL, objectName, width, height, likes, created, objectBlob, likedByMe) = row
            let object = (name: objectName, blob: objectBlob)
            guard let media = photos.media(unsplashURL: unsplashURL, object: object, width: width, height: height, expires: expires) else {
                throw UnreadableRow(table: "posts", id: id)
            }
            return Post(
                id: id,
                author: .init(id: author, username: username, avatarURL: ShownAvatar.url(avatar, publicBase: photos.storageLinks.publicBase)),
                photo: try Self.photoRef(key: key, objectName: objectName, id: id),
                photoKey: key,
                caption: caption,
                media: media,
                likeCount: likes,
                likedByMe: likedByMe,
                createdAt: created
            )
        }
    }

    // MARK: Deleting

    /// Deletes the user's post, its object after it, and what pointed at its own photo (likes and
    /// collection entries of `post:<id>`), with `social.post.deleted.v1`.
    /// - Throws: 404 for no such post, 403 for someone else's.
    func delete(_ id: UUID, user: UUID) async throws {
        let blob = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection -> BlobKey? in
            let author = try await connection.query("SELECT user_id FROM posts WHERE id = \(id)", logger: logger)
                .collect().first.map { try $0.decode(UUID.self) }
            guard let author else { throw Self.notFound }
            guard author == user else { throw Self.notYours }
            // The delete is the check that counts (a post deleted meanwhile is gone).
            let deleted = try await connection.query(
                "DELETE FROM posts WHERE id = \(id) AND user_id = \(user) RETURNING object_id, photo_key",
                logger: logger
            )
            .collect().first.map { try $0.decode((UUID?, String).self) }
            guard let (object, key) = deleted else { throw Self.notFound }
            // Others' likes and collections of this post's own photo go with it.
            try await connection.query("SELECT set_config('app.service', 'on', true)", logger: logger)
            if key == PhotoKey.post(id).description {
                try await connection.query("DELETE FROM likes WHERE photo_key = \(key)", logger: logger)
                try await connection.query("DELETE FROM like_counts WHERE photo_key = \(key)", logger: logger)
                try await connection.query("DELETE FROM collection_photos WHERE photo_key = \(key)", logger: logger)
            }
            var blob: BlobKey?
            if let object {
                blob = try await connection.query("DELETE FROM objects WHERE id = \(object) RETURNING blob_key", logger: logger)
                    .collect().first.flatMap { BlobKey(try $0.decode(String.self)) }
                try await ObjectStore.intend(.delete, blob, on: connection, logger: logger)
            }
            try await outbox.append(
                PostDeleted(postId: id, userId: user, deletedAt: Date()),
                subject: user.lowercased,
                on: connection,
                logger: logger
            )
            return blob
        }
        if let blob { await objects.deleteBlob(blob) }
    }
}
