import Blobs
import Foundation
import Imaging
import Logging
import NIOCore
import PostgresNIO
import ResourceAPI
import ServiceKit

/// Storage objects: their rows in `objects` and their bytes in the blob store, kept so that no row
/// ever points at a blob that is not whole, and no blob outlives its row for long.
///
/// Every blob an object uses is written under a fresh key (`{bucket}/{owner}/{version id}`), listed
/// in `blob_intents` before the write; the row is pointed at it only once it is whole and checked.
/// A replaced or deleted object's old blob is listed for deletion in the transaction that lets go
/// of it, and deleted after the commit. A crash anywhere leaves only listed blobs, which
/// `OrphanCollector` deletes.
struct ObjectStore: Sendable {
    let client: PostgresClient
    let blobs: any BlobStore
    let logger: Logger
    let maxBytes: Int
    /// Re-encodes what a public bucket shows to anyone.
    let renderer: Renderer

    /// How an upload names what it replaces.
    enum Mode: Sendable {
        /// `POST`: a new object; with `upsert`, replacing one of the same name.
        case create(upsert: Bool)
        /// `PUT`: replacing an existing object.
        case replace
    }

    /// The bytes of an upload: streamed from the request, already in memory (a multipart part),
    /// or already in the store (a resumable upload's): one blob written in place, moved to the
    /// object's key, or parts the store composes there.
    enum Body: Sendable {
        case stream(any AsyncSequence<ByteBuffer, any Error> & Sendable)
        case bytes([UInt8])
        case placed(BlobKey)
        case composed(from: [BlobKey], by: any ComposingBlobStore)
    }

    /// Stores an upload under `path`, checked to be a JPEG, PNG or WebP of at most `maxBytes` and
    /// 50 megapixels; nothing is kept of a refused one, and an object it would replace is untouched.
    /// With an `Idempotency-Key`, the retry of an upload that was stored under that key finds it
    /// (same name and bytes) or is refused (`keyReused`: another name or other bytes).
    /// - Throws: `StorageError`s: 409 `Duplicate` (a `create` without upsert of a name in use) or
    ///   `object-attached`, 404 (a `replace` of nothing), 413, 415.
    func upload(
        _ path: ObjectPath,
        user: UUID,
        mode: Mode,
        body: Body,
        idempotencyKey: String?,
        cacheControl: String
    ) async throws -> IdempotencyKey.Outcome<StoredObject> {
        // Refuse early what is sure to be refused, before reading a byte of the body.
        try await checkWritable(path, user: user, mode: mode, idempotencyKey: idempotencyKey)

        let version = UUID()
        let key = BlobKey(segments: [path.bucket.rawValue, path.owner.lowercased, version.lowercased])!
        try await intend(.upload, key)
        do {
            var header: SourceHeader
            var size: Int
            let idempotency: IdempotencyKey?
            switch body {
            case .stream(let stream):
                (size, idempotency) = try await put(key, streaming: stream, idempotencyKey: idempotencyKey)
                header = try await inspectStored(key)
            case .bytes(let bytes):
                guard bytes.count <= maxBytes else { throw BlobError.tooLarge(limit: maxBytes) }
                header = try inspect { () throws(ImagingError) in try SourceInspection.inspect(bytes, limits: SourceLimits(maxBytes: maxBytes)) }
                try await blobs.put(key, bytes: bytes)
                size = bytes.count
                idempotency = idempotencyKey.map { IdempotencyKey(key: $0, body: bytes) }
            case .placed(let placed):
                try await blobs.move(placed, to: key)
                (size, header) = try await checkedInStore(key)
                idempotency = nil
            case .composed(let parts, let composer):
                try await composer.compose(key, from: parts)
                (size, header) = try await checkedInStore(key)
                idempotency = nil
            }
            if path.bucket.isPublic { (size, header) = try await stripped(key, header) }
            let blob = NewBlob(key: key, size: size, header: header, cacheControl: cacheControl, idempotency: idempotency)
            let (outcome, released) = try await record(path, user: user, mode: mode, blob: blob)
            if !outcome.isCreated { await deleteBlob(key) }
            if let released { await deleteBlob(released) }
            return outcome
        } catch {
            await deleteBlob(key)
            if case BlobError.tooLarge(let limit) = error { throw StorageError.tooLarge(limit: limit) }
            if let error = error as? PSQLError, error.serverInfo?[.constraintName] == "objects_idempotency" { return .keyReused }
            throw error
        }
    }

    /// The blob at `key` re-encoded in place, at its size, without its metadata (a camera's
    /// location): a public bucket's object is shown to anyone. HEIF and AVIF become JPEG.
    private func stripped(_ key: BlobKey, _ header: SourceHeader) async throws -> (Int, SourceHeader) {
        guard let original = try await blobs.get(key) else { throw StorageError.notFound }
        // At its size and in its format (HEIF and AVIF as JPEG), as `format=origin` renders it.
        let transform = TransformRequest(quality: 90, format: "origin").transform(stored: header.format.mediaType, accept: nil)
        let clean = try await renderer.transform(original, transform, limits: SourceLimits(maxBytes: maxBytes))
        try await blobs.put(key, bytes: clean.bytes)
        return (clean.bytes.count, clean.header)
    }

    /// The size and header of the blob at `key`, written there whole.
    /// - Throws: 413 past `maxBytes`, 415 when it is not an image Splash stores.
    private func checkedInStore(_ key: BlobKey) async throws -> (Int, SourceHeader) {
        let size = try await blobs.size(of: key) ?? 0
        guard size <= maxBytes else { throw BlobError.tooLarge(limit: maxBytes) }
        return (size, try await inspectStored(key))
    }

    /// The header of the blob at `key`, read from its first bytes.
    /// - Throws: 415 when it is not an image Splash stores.
    private func inspectStored(_ key: BlobKey) async throws -> SourceHeader {
        do {
            return try await SourceInspection.inspect(key, in: blobs, limits: SourceLimits(maxBytes: maxBytes))
        } catch let error as ImagingError {
            throw Self.notAnImage(error)
        }
    }

    /// Streams the body to `key`, hashing it on the way when there is an idempotency key.
    private func put(
        _ key: BlobKey,
        streaming stream: some AsyncSequence<ByteBuffer, any Error> & Sendable,
        idempotencyKey: String?
    ) async throws -> (Int, IdempotencyKey?) {
        let body = KeyedUploadBody(stream, key: idempotencyKey)
        let size = try await blobs.put(key, streaming: body, limit: maxBytes)
        return (size, body.idempotency)
    }

    /// A whole, checked blob an upload wrote, and what its row is to say.
    private struct NewBlob {
        var key: BlobKey
        var size: Int
        var header: SourceHeader
        var cacheControl: String
        var idempotency: IdempotencyKey?
    }

    /// Refuses what an upload of `path` in `mode` is sure to be refused: 409 `Duplicate` (a name
    /// in use, not to be replaced) or `object-attached`, 404 (a `replace` of nothing). The retry of
    /// the upload that wrote the object (its `Idempotency-Key`) passes, to be told apart by bytes.
    func checkWritable(_ path: ObjectPath, user: UUID, mode: Mode, idempotencyKey: String? = nil) async throws {
        let existing = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query(
                "SELECT state, idempotency_key FROM objects WHERE bucket = \(path.bucket.rawValue) AND name = \(path.name)",
                logger: logger
            ).collect().first.map { try $0.decode((String, String?).self) }
        }
        if existing == nil || idempotencyKey == nil || existing?.1 != idempotencyKey {
            try Self.check(existing: existing?.0, mode: mode)
        }
    }

    private static func check(existing state: String?, mode: Mode) throws {
        switch (mode, state) {
        case (.create(upsert: false), _?): throw StorageError.duplicate
        case (.replace, nil): throw StorageError.notFound
        case (_, StoredObject.State.attached.rawValue?): throw StorageError.attached
        default: break
        }
    }

    private func inspect(_ read: () throws(ImagingError) -> SourceHeader) throws -> SourceHeader {
        do {
            return try read()
        } catch {
            throw Self.notAnImage(error)
        }
    }

    private static func notAnImage(_ error: ImagingError) -> Problem {
        StorageError.notAnImage("Only JPEG, PNG and WebP images up to 50 megapixels can be stored: \(error.description)")
    }

    /// Points the row at the new blob (inserting or replacing it) and returns the blob it let go of
    /// — or, for the retry of the upload that wrote the row, the row as it is.
    private func record(_ path: ObjectPath, user: UUID, mode: Mode, blob: NewBlob) async throws -> (IdempotencyKey.Outcome<StoredObject>, BlobKey?) {
        let mime = blob.header.format.mediaType
        let (key, header, idempotency) = (blob.key, blob.header, blob.idempotency)
        return try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let current = try await connection.query(
                """
                SELECT \(unescaped: StoredObject.columns), idempotency_key, request_hash
                FROM objects WHERE bucket = \(path.bucket.rawValue) AND name = \(path.name) FOR UPDATE
                """,
                logger: logger
            ).collect().first
            let stored = try current.map(StoredObject.init)
            if let current, let idempotency {
                let columns = current.makeRandomAccess()
                let (earlierKey, earlierHash) = (try columns[12].decode(String?.self), try columns[13].decode(String?.self))
                if earlierKey == idempotency.key, let stored {
                    return (earlierHash == idempotency.requestHash ? .replayed(stored) : .keyReused, nil)
                }
            }
            try Self.check(existing: stored?.state.rawValue, mode: mode)
            let row: PostgresRow
            if let stored {
                row = try await connection.query(
                    """
                    UPDATE objects SET blob_key = \(key.path), size = \(blob.size), mime_type = \(mime), width = \(header.width), height = \(header.height),
                        cache_control = \(blob.cacheControl), idempotency_key = \(idempotency?.key), request_hash = \(idempotency?.requestHash),
                        updated_at = clock_timestamp()
                    WHERE id = \(stored.id) RETURNING \(unescaped: StoredObject.columns)
                    """,
                    logger: logger
                ).collect()[0]
                try await Self.intend(.delete, stored.blobKey, on: connection, logger: logger)
            } else {
                let state: StoredObject.State = path.bucket == .posts ? .pending : .stored
                row = try await connection.query(
                    """
                    INSERT INTO objects (id, bucket, name, owner_id, state, blob_key, size, mime_type, width, height, cache_control, idempotency_key, request_hash)
                    VALUES (\(UUID()), \(path.bucket.rawValue), \(path.name), \(user), \(state.rawValue), \(key.path), \(blob.size), \(mime),
                            \(header.width), \(header.height), \(blob.cacheControl), \(idempotency?.key), \(idempotency?.requestHash))
                    RETURNING \(unescaped: StoredObject.columns)
                    """,
                    logger: logger
                ).collect()[0]
            }
            try await connection.query("DELETE FROM blob_intents WHERE blob_key = \(key.path)", logger: logger)
            return (.created(try StoredObject(row)), stored?.blobKey)
        }
    }

    /// The object `path` names, if `user` may read it (their own; any attached one; any avatar).
    func object(_ path: ObjectPath, user: UUID) async throws -> StoredObject? {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await Self.object(path, on: connection, logger: logger)
        }
    }

    /// The object `path` names, whoever owns it: for a signed link's or a public bucket's download.
    func object(_ path: ObjectPath) async throws -> StoredObject? {
        try await client.withServiceTransaction(logger: logger) { connection in
            try await Self.object(path, on: connection, logger: logger)
        }
    }

    static func object(_ path: ObjectPath, on connection: PostgresConnection, logger: Logger) async throws -> StoredObject? {
        try await connection.query(
            """
            SELECT \(unescaped: StoredObject.columns) FROM objects WHERE bucket = \(path.bucket.rawValue) AND name = \(path.name)
            """,
            logger: logger
        ).collect().first.map(StoredObject.init)
    }

    /// Whether `user` has an account social knows of (a profile, projected from auth's users).
    func ownerIsKnown(_ user: UUID) async throws -> Bool {
        try await client.withServiceTransaction(logger: logger) { connection in
            try await connection.query("SELECT EXISTS (SELECT 1 FROM profiles WHERE user_id = \(user))", logger: logger)
                .collect()[0].decode(Bool.self)
        }
    }

    /// The bytes of `object`, or `nil` when its blob is gone (it was deleted meanwhile).
    func bytes(of object: StoredObject) async throws -> [UInt8]? {
        try await blobs.get(object.blobKey)
    }

    /// The user's objects of `bucket` whose names start with `prefix`.
    func objects(of user: UUID, in bucket: Bucket, prefix: String) async throws -> [StoredObject] {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query(
                """
                SELECT \(unescaped: StoredObject.columns) FROM objects
                WHERE owner_id = \(user) AND bucket = \(bucket.rawValue) AND starts_with(name, \(prefix))
                ORDER BY name
                """,
                logger: logger
            ).collect().map(StoredObject.init)
        }
    }

    /// Deletes the user's objects named `names` in `bucket`, except those a post shows; returns
    /// the ones deleted.
    func delete(_ names: [String], in bucket: Bucket, user: UUID) async throws -> [StoredObject] {
        let deleted = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM objects WHERE owner_id = \(user) AND bucket = \(bucket.rawValue) AND name = ANY(\(names)) AND state <> 'attached'
                RETURNING \(unescaped: StoredObject.columns)
                """,
                logger: logger
            ).collect().map(StoredObject.init)
            for object in rows { try await Self.intend(.delete, object.blobKey, on: connection, logger: logger) }
            return rows
        }
        for object in deleted { await deleteBlob(object.blobKey) }
        return deleted
    }

    // MARK: Blob intents

    enum Intent: String { case upload, delete }

    func intend(_ intent: Intent, _ key: BlobKey) async throws {
        try await client.withServiceTransaction(logger: logger) { connection in
            try await Self.intend(intent, key, on: connection, logger: logger)
        }
    }

    /// Lists `key` for `intent`, in the caller's transaction.
    static func intend(_ intent: Intent, _ key: BlobKey?, on connection: PostgresConnection, logger: Logger) async throws {
        guard let key else { return }
        try await connection.query(
            """
            INSERT INTO blob_intents (blob_key, action) VALUES (\(key.path), \(intent.rawValue))
            ON CONFLICT (blob_key) DO UPDATE SET action = excluded.action
            """,
            logger: logger
        )
    }

    /// Deletes a blob no row points at, then its intent. Best effort: what fails stays listed, for
    /// the collector.
    func deleteBlob(_ key: BlobKey) async {
        do {
            // A crash part-way leaves the blob listed, and the collector's deleteBlob of it
            // deletes the rest then.
            try await ImageVariants.deleteImage(key, in: blobs)
            try await client.withServiceTransaction(logger: logger) { connection in
                try await connection.query("DELETE FROM blob_intents WHERE blob_key = \(key.path)", logger: logger)
            }
        } catch {
            logger.warning(
                "A blob could not be deleted now; the collector will",
                metadata: ["blob": "\(key.path)", "error": "\(error.logDescription)"]
            )
        }
    }
}
