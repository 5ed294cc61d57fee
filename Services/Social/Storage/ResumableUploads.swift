import Blobs
import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceKit

/// TUS uploads (`resumable_uploads`, `resumable_parts`): an upload is created with its length and
/// object name, takes its bytes in PATCHes at the offset reached so far, and becomes an object,
/// checked as any upload, when the last byte lands. Where the store writes in place (files, which
/// every replica shares), the chunks are written straight into one blob that becomes the object's
/// without a copy; on S3 each PATCH's bytes are a part of their own (added to the last one while
/// that is under S3's 5 MiB part minimum), composed by S3 into the object's blob at the end.
/// Either way any replica takes the next chunk. Nothing of it is an object before that; an upload
/// not finished within a day has expired and is collected with its parts.
struct ResumableUploads: Sendable {
    let client: PostgresClient
    let objects: ObjectStore
    let logger: Logger

    /// How long an upload may take from its creation.
    static let lifetime: TimeInterval = 86_400
    /// How long a PATCH holds the upload against another writer (the route's timeout, and some).
    static let writerLease: TimeInterval = 130

    struct Upload: Sendable, Equatable {
        var id: UUID
        var path: ObjectPath
        var length: Int
        var offset: Int
        var upsert: Bool
        var cacheControl: String
        var expiresAt: Date
        /// Its chunks are written into one blob (the file store), not a blob each.
        var inPlace = false
    }

    /// Why a PATCH or a HEAD is refused, in TUS's terms.
    enum Refusal: Error, Equatable {
        /// No such upload of the caller's (or it finished, or was terminated).
        case notFound
        /// Older than its lifetime: 410.
        case expired
        /// `Upload-Offset` is not where the upload is: 409, with where it is.
        case offsetMismatch(current: Int)
        /// Another PATCH is writing it now: 409.
        case busy
        /// More bytes than `Upload-Length` leaves: 413.
        case pastLength(length: Int)
    }

    // MARK: Creating

    /// A new upload of `length` bytes to `path`, refused at once when the object could never be
    /// written (`ObjectStore.checkWritable`) or is over the size limit.
    func create(_ path: ObjectPath, user: UUID, length: Int, upsert: Bool, cacheControl: String, now: Date = Date()) async throws -> Upload {
        guard length <= objects.maxBytes else { throw StorageError.tooLarge(limit: objects.maxBytes) }
        try await objects.checkWritable(path, user: user, mode: .create(upsert: upsert))
        let upload = Upload(
            id: UUID(),
            path: path,
            length: length,
            offset: 0,
            upsert: upsert,
            cacheControl: cacheControl,
            expiresAt: now.addingTimeInterval(Self.lifetime)
        )
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO resumable_uploads (id, owner_id, bucket, name, upload_length, upsert, cache_control, expires_at)
                VALUES (\(upload.id), \(user), \(path.bucket.rawValue), \(path.name), \(length), \(upsert), \(cacheControl), \(upload.expiresAt))
                """,
                logger: logger
            )
        }
        return upload
    }

    /// The caller's upload `id`, as it stands.
    /// - Throws: `Refusal.notFound`, `.expired`.
    func upload(_ id: UUID, user: UUID, now: Date = Date()) async throws -> Upload {
        let found = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await Self.upload(id, on: connection, logger: logger)
        }
        guard let found else { throw Refusal.notFound }
        guard found.expiresAt > now else { throw Refusal.expired }
        return found
    }

    private static let columns = "id, bucket, name, upload_length, upload_offset, upsert, cache_control, expires_at, in_place"

    private static func upload(_ id: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Upload? {
        let row = try await connection.query("SELECT \(unescaped: columns) FROM resumable_uploads WHERE id = \(id)", logger: logger)
            .collect().first
        guard let row else { return nil }
        let (id, bucket, name, length, offset, upsert, cacheControl, expires, inPlace) =
            try row.decode((UUID, String, String, Int, Int, Bool, String, Date, Bool).self)
        guard let bucket = Bucket(rawValue: bucket) else { throw UnreadableRow(table: "resumable_uploads", id: id) }
        return Upload(
            id: id,
            path: try ObjectPath(bucket: bucket, name: name),
            length: length,
            offset: offset,
            upsert: upsert,
            cacheControl: cacheControl,
            expiresAt: expires,
            inPlace: inPlace
        )
    }

    // MARK: Appending

    /// Appends `body` at `offset`: what arrives is kept, even when the request breaks off, and the
    /// offset moves by it. When the upload is whole, it becomes its object.
    /// - Returns: the upload after the PATCH.
    /// - Throws: `Refusal`s; `StorageError`s when the whole upload is refused as an object (what
    ///   it had is deleted then).
    func append(
        _ id: UUID,
        user: UUID,
        at offset: Int,
        body: some AsyncSequence<ByteBuffer, any Error>,
        now: Date = Date()
    ) async throws -> Upload {
        let files = objects.blobs as? any InPlaceBlobStore
        var (upload, lastPart) = try await lease(id, user: user, at: offset, now: now, inPlace: files != nil)
        let broken: (any Error)?
        if let files, upload.inPlace {
            (upload, broken) = try await write(upload, user: user, body: body, into: files)
        } else {
            (upload, broken) = try await storePart(upload, after: lastPart, user: user, body: body)
        }
        if let broken { throw broken }
        if upload.offset == upload.length { try await finish(upload, user: user) }
        return upload
    }

    /// The chunk written where the upload's bytes are (one blob, the part at offset 0), straight
    /// from the request.
    private func write(
        _ upload: Upload,
        user: UUID,
        body: some AsyncSequence<ByteBuffer, any Error>,
        into files: any InPlaceBlobStore
    ) async throws -> (Upload, (any Error)?) {
        let written: Int
        let broken: (any Error)?
        do {
            (written, broken) = try await files.write(
                Self.partKey(upload, offset: 0),
                at: upload.offset,
                streaming: body,
                limit: upload.length - upload.offset
            )
        } catch {
            try await release(upload.id, user: user)
            throw error is BlobError ? Refusal.pastLength(length: upload.length) : error
        }
        var upload = upload
        if written > 0 {
            upload.offset = try await advance(upload, by: written, user: user)
        } else {
            try await release(upload.id, user: user)
        }
        return (upload, broken)
    }

    /// The chunk as a part of its own (stores that cannot write in place: S3), held until the
    /// request ends so that a broken-off one keeps what arrived; `lastPart` is the one before it.
    private func storePart(
        _ upload: Upload,
        after lastPart: Part?,
        user: UUID,
        body: some AsyncSequence<ByteBuffer, any Error>
    ) async throws -> (Upload, (any Error)?) {
        var received = ByteBuffer()
        var broken: (any Error)?
        do {
            for try await chunk in body {
                guard received.readableBytes + chunk.readableBytes <= upload.length - upload.offset else {
                    try await release(upload.id, user: user)
                    throw Refusal.pastLength(length: upload.length)
                }
                var chunk = chunk
                received.writeBuffer(&chunk)
            }
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            // The request broke off: what arrived is kept, and the client asks where it stands.
            broken = error
        }
        var upload = upload
        if received.readableBytes > 0 {
            do {
                upload.offset = try await record(upload, after: lastPart, user: user, part: Array(buffer: received))
            } catch {
                // Not stored: the next try may come at once, not after the lease.
                try? await release(upload.id, user: user)
                throw error
            }
        } else {
            try await release(upload.id, user: user)
        }
        return (upload, broken)
    }

    /// A part of an upload written a blob per chunk: where it starts and its size.
    struct Part {
        var offset: Int
        var size: Int
    }

    /// Takes the upload for one writer at `offset`, with its last part when its chunks are parts
    /// of their own. Its first chunk, where the store writes in place (`inPlace`), makes it an
    /// upload written in place: its one blob is listed as its part (with the whole length) before
    /// a byte of it is written.
    private func lease(_ id: UUID, user: UUID, at offset: Int, now: Date, inPlace: Bool) async throws -> (Upload, lastPart: Part?) {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let taken = try await connection.query(
                """
                UPDATE resumable_uploads SET writing_until = \(now.addingTimeInterval(Self.writerLease))
                WHERE id = \(id) AND (writing_until IS NULL OR writing_until < \(now)) AND upload_offset = \(offset) AND expires_at > \(now)
                RETURNING id
                """,
                logger: logger
            ).collect()
            guard var upload = try await Self.upload(id, on: connection, logger: logger) else { throw Refusal.notFound }
            guard upload.expiresAt > now else { throw Refusal.expired }
            guard upload.offset == offset else { throw Refusal.offsetMismatch(current: upload.offset) }
            guard !taken.isEmpty else { throw Refusal.busy }
            if inPlace, offset == 0, !upload.inPlace {
                try await connection.query(
                    """
                    INSERT INTO resumable_parts (upload_id, owner_id, part_offset, size, blob_key)
                    VALUES (\(id), \(user), 0, \(upload.length), \(Self.partKey(upload, offset: 0).path)) ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
                try await connection.query("UPDATE resumable_uploads SET in_place = true WHERE id = \(id)", logger: logger)
                upload.inPlace = true
            }
            if upload.inPlace { return (upload, nil) }
            let last = try await connection.query(
                "SELECT part_offset, size FROM resumable_parts WHERE upload_id = \(id) ORDER BY part_offset DESC LIMIT 1",
                logger: logger
            ).collect().first.map { try $0.decode((Int, Int).self) }
            return (upload, last.map { Part(offset: $0.0, size: $0.1) })
        }
    }

    private func release(_ id: UUID, user: UUID) async throws {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query("UPDATE resumable_uploads SET writing_until = NULL WHERE id = \(id)", logger: logger)
        }
    }

    /// Moves the offset past `written` bytes and ends the lease; returns the new offset.
    private func advance(_ upload: Upload, by written: Int, user: UUID) async throws -> Int {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await Self.advance(upload, by: written, on: connection, logger: logger)
        }
    }

    private static func advance(_ upload: Upload, by written: Int, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await connection.query(
            """
            UPDATE resumable_uploads SET upload_offset = upload_offset + \(written), writing_until = NULL
            WHERE id = \(upload.id) RETURNING upload_offset
            """,
            logger: logger
        ).collect()[0].decode(Int.self)
    }

    /// Stores `part` at the upload's offset and moves the offset; returns the new offset. Where
    /// the store composes the parts (S3), a last part smaller than its least part is staged: this
    /// one is added to it (the offset still moves only once the bytes are stored).
    private func record(_ upload: Upload, after lastPart: Part?, user: UUID, part: [UInt8]) async throws -> Int {
        var (staged, stagedAt): ([UInt8], Int?) = ([], nil)
        if let composer = objects.blobs as? any ComposingBlobStore, let last = lastPart, last.size < composer.minimumPartSize {
            // Its first `size` bytes: a crash after a longer one was written left more.
            guard let kept = try await objects.blobs.get(Self.partKey(upload, offset: last.offset), range: 0..<last.size),
                kept.count == last.size
            else { throw PartStream.PartMissing() }
            (staged, stagedAt) = (kept, last.offset)
        }
        let (start, bytes) = (stagedAt ?? upload.offset, staged + part)
        let key = Self.partKey(upload, offset: start)
        // A new part's blob is listed while written; a staged one is listed by its row already.
        if start == upload.offset { try await objects.intend(.upload, key) }
        try await objects.blobs.put(key, bytes: bytes)
        return try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            if start == upload.offset {
                try await connection.query(
                    """
                    INSERT INTO resumable_parts (upload_id, owner_id, part_offset, size, blob_key)
                    VALUES (\(upload.id), \(user), \(start), \(bytes.count), \(key.path))
                    """,
                    logger: logger
                )
                try await connection.query("DELETE FROM blob_intents WHERE blob_key = \(key.path)", logger: logger)
            } else {
                try await connection.query(
                    "UPDATE resumable_parts SET size = \(bytes.count) WHERE upload_id = \(upload.id) AND part_offset = \(start)",
                    logger: logger
                )
            }
            return try await Self.advance(upload, by: part.count, on: connection, logger: logger)
        }
    }

    /// `{bucket}/{owner}/tus-{upload id}/{offset}`.
    static func partKey(_ upload: Upload, offset: Int) -> BlobKey {
        BlobKey(segments: [upload.path.bucket.rawValue, upload.path.owner.lowercased, "tus-\(upload.id.lowercased)", String(offset)])!
    }

    /// The whole upload as its object, through the plain upload's checks; the upload and its
    /// parts go either way.
    private func finish(_ upload: Upload, user: UUID) async throws {
        // Written in place, the one blob becomes the object's (moved).
        let body: ObjectStore.Body
        if upload.inPlace {
            body = .placed(Self.partKey(upload, offset: 0))
        } else {
            let keys = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
                try await connection.query(
                    "SELECT blob_key FROM resumable_parts WHERE upload_id = \(upload.id) ORDER BY part_offset",
                    logger: logger
                ).collect().compactMap { BlobKey(try $0.decode(String.self)) }
            }
            // Composed by the store (S3's multipart copy), or read in turn into the object's blob.
            if let composer = objects.blobs as? any ComposingBlobStore {
                body = .composed(from: keys, by: composer)
            } else {
                body = .stream(PartStream(blobs: objects.blobs, keys: keys))
            }
        }
        do {
            // No idempotency key: the outcome is the object made.
            _ = try await objects.upload(
                upload.path,
                user: user,
                mode: .create(upsert: upload.upsert),
                body: body,
                idempotencyKey: nil,
                cacheControl: upload.cacheControl
            )
        } catch {
            _ = try? await remove(upload.id, user: user)
            throw error
        }
        if upload.inPlace {
            // Its blob is the object's now: only the rows go.
            try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
                try await connection.query("DELETE FROM resumable_parts WHERE upload_id = \(upload.id)", logger: logger)
                try await connection.query("DELETE FROM resumable_uploads WHERE id = \(upload.id)", logger: logger)
            }
        } else {
            try await remove(upload.id, user: user)
        }
    }

    // MARK: Ending

    /// Deletes the caller's upload and its parts (TUS termination).
    /// - Returns: whether there was one.
    @discardableResult
    func remove(_ id: UUID, user: UUID) async throws -> Bool {
        let (found, keys) = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await Self.delete([id], on: connection, logger: logger)
        }
        for key in keys { await objects.deleteBlob(key) }
        return found > 0
    }

    /// Deletes the uploads `ids` and their parts' rows, listing the parts' blobs for deletion in
    /// the same transaction.
    /// - Returns: how many uploads there were, and the blobs to delete after the commit.
    static func delete(_ ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> (Int, [BlobKey]) {
        let keys = try await connection.query("DELETE FROM resumable_parts WHERE upload_id = ANY(\(ids)) RETURNING blob_key", logger: logger)
            .collect().compactMap { BlobKey(try $0.decode(String.self)) }
        for key in keys { try await ObjectStore.intend(.delete, key, on: connection, logger: logger) }
        let count = try await connection.query("DELETE FROM resumable_uploads WHERE id = ANY(\(ids)) RETURNING id", logger: logger).collect().count
        return (count, keys)
    }

    /// Deletes uploads expired before `now` (at most 100 a round; replicas share the work) and
    /// their parts.
    /// - Returns: how many.
    func collectExpired(now: Date = Date()) async throws -> Int {
        let (count, keys) = try await client.withServiceTransaction(logger: logger) { connection in
            let ids = try await connection.query(
                "SELECT id FROM resumable_uploads WHERE expires_at < \(now) ORDER BY expires_at LIMIT 100 FOR UPDATE SKIP LOCKED",
                logger: logger
            ).collect().map { try $0.decode(UUID.self) }
            return try await Self.delete(ids, on: connection, logger: logger)
        }
        for key in keys { await objects.deleteBlob(key) }
        return count
    }
}

/// The parts of an upload, read one after another as one body.
struct PartStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let blobs: any BlobStore
    let keys: [BlobKey]

    struct PartMissing: Error {}

    func makeAsyncIterator() -> Iterator { Iterator(blobs: blobs, keys: keys) }

    struct Iterator: AsyncIteratorProtocol {
        let blobs: any BlobStore
        let keys: [BlobKey]
        var index = 0
        var current: (any AsyncIteratorProtocol<ByteBuffer, any Error>)?

        mutating func next() async throws -> ByteBuffer? {
            while true {
                if current == nil {
                    guard index < keys.count else { return nil }
                    guard let part = try await blobs.open(keys[index]) else { throw PartMissing() }
                    current = part.chunks.makeAsyncIterator()
                    index += 1
                }
                if let chunk = try await current?.next() { return chunk }
                current = nil
            }
        }
    }
}
