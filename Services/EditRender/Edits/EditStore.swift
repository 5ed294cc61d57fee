import Contracts
import Database
import EventBus
import Foundation
import Logging
import PostgresNIO
import ResourceAPI
import ServiceAssembly
import ServiceKit

/// The `render` schema's uploads and edits. Every query runs in a transaction whose `app.user_id`
/// is the owner, so row-level security keeps each user to their own rows even if a check here
/// were missed.
struct EditStore: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let logger: Logger

    /// Inserts the edit and its `render.edit.requested.v1` in one transaction — or finds the edit
    /// an earlier request with the same `Idempotency-Key` made.
    func create(_ edit: Edit, idempotency: IdempotencyKey) async throws -> IdempotencyKey.Outcome<Edit> {
        try await client.withUserTransaction(userID: edit.userID.lowercased, logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO edits (id, user_id, idempotency_key, request_hash, source, filters, output, created_at)
                VALUES (\(edit.id), \(edit.userID), \(idempotency.key), \(idempotency.requestHash), \(try JSONBody.text(edit.source))::jsonb, \(try JSONBody.text(edit.filters))::jsonb, \(try JSONBody.text(edit.output))::jsonb, \(edit.createdAt))
                ON CONFLICT (user_id, idempotency_key) DO NOTHING
                RETURNING id
                """,
                logger: logger
            ).collect()
            if inserted.isEmpty {
                let rows = try await connection.query(
                    "SELECT request_hash, id FROM edits WHERE user_id = \(edit.userID) AND idempotency_key = \(idempotency.key)",
                    logger: logger
                ).collect()
                guard let (hash, id) = try rows.first?.decode((String, UUID).self), hash == idempotency.requestHash else { return .keyReused }
                let earlier = try await connection.query("SELECT \(unescaped: Self.columns) FROM edits WHERE id = \(id)", logger: logger).collect()
                return try earlier.first.map { .replayed(try Self.decode($0)) } ?? .keyReused
            }
            try await outbox.append(
                EditRequested(
                    editId: edit.id,
                    userId: edit.userID,
                    source: edit.source,
                    filters: edit.filters,
                    output: edit.output,
                    requestedAt: edit.createdAt
                ),
                subject: edit.userID.lowercased,
                on: connection,
                logger: logger
            )
            return .created(edit)
        }
    }

    func edit(_ id: UUID, user: UUID) async throws -> Edit? {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query("SELECT \(unescaped: Self.columns) FROM edits WHERE id = \(id)", logger: logger).collect().first.map(
                Self.decode
            )
        }
    }

    /// The user's edits, newest first, `limit` after `cursor`.
    private func edits(of user: UUID, limit: Int, after cursor: PageCursor?, on connection: PostgresConnection) async throws -> [Edit] {
        let rows =
            if let cursor, let id = cursor.id {
                try await connection.query(
                    "SELECT \(unescaped: Self.columns) FROM edits WHERE (created_at, id) < (\(ExactTimestamp(microseconds: cursor.microseconds)), \(id)) ORDER BY created_at DESC, id DESC LIMIT \(limit)",
                    logger: logger
                ).collect()
            } else {
                try await connection.query(
                    "SELECT \(unescaped: Self.columns) FROM edits ORDER BY created_at DESC, id DESC LIMIT \(limit)",
                    logger: logger
                ).collect()
            }
        return try rows.map(Self.decode)
    }

    /// The user's edits, newest first; with `since`, those made or changed (rendered, failed)
    /// after that answer, and the ids of those deleted (`DeltaSync`).
    func edits(of user: UUID, sync request: SyncRequest) async throws -> SyncPage<Edit> {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let token = try await connection.syncToken(request.pinned, list: "edits", owner: user.lowercased, logger: logger)
            let limit = request.limit + 1
            guard let since = request.since else {
                let edits = try await edits(of: user, limit: limit, after: request.cursor, on: connection)
                let (items, next) = request.page(of: edits, token: token) { PageCursor(time: $0.createdAt, id: $0.id) }
                return SyncPage(items: Array(items), deleted: [], nextCursor: next, syncToken: token)
            }
            let after = try request.syncPositionByID()
            let changed = try await connection.query(
                """
                SELECT id, sync_xid::text FROM edits
                WHERE user_id = \(user)
                  AND \(changedAfter: since)
                  AND (\(after == nil) OR (sync_xid, id) > (\(after?.0 ?? "0")::xid8, \(after?.1 ?? UUID())))
                ORDER BY sync_xid, id LIMIT \(limit)
                """,
                logger: logger
            ).collect().map { try $0.decode((UUID, String).self) }
            let (page, next) = request.page(of: changed, token: token) {
                SyncRequest.position(xid: $0.1, key: $0.0.lowercased)
            }
            let ids = page.map(\.0)
            var byID: [UUID: Edit] = [:]
            for row in try await connection.query("SELECT \(unescaped: Self.columns) FROM edits WHERE id = ANY(\(ids))", logger: logger).collect() {
                let edit = try Self.decode(row)
                byID[edit.id] = edit
            }
            let items = ids.compactMap { byID[$0] }
            var deleted: [String] = []
            if request.cursor == nil {
                let gone = try await connection.query(
                    """
                    SELECT edit_id FROM edit_tombstones
                    WHERE user_id = \(user)
                      AND \(changedAfter: since)
                    """,
                    logger: logger
                )
                for try await id in gone.decode(UUID.self) { deleted.append(id.lowercased) }
            }
            return SyncPage(items: items, deleted: deleted, nextCursor: next, syncToken: token)
        }
    }

    /// Deletes the edit; returns it (for its blob) when it existed.
    func delete(_ id: UUID, user: UUID) async throws -> Edit? {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query("DELETE FROM edits WHERE id = \(id) RETURNING \(unescaped: Self.columns)", logger: logger).collect().first.map(
                Self.decode
            )
        }
    }

    // MARK: Uploads

    struct Upload: Sendable, Equatable {
        var id: UUID
        var userID: UUID
        var key: String
        var format: String
        var width: Int
        var height: Int
        var bytes: Int
    }

    /// Records the upload — or, when an earlier upload was sent with the same `Idempotency-Key`,
    /// finds it (the caller then deletes the bytes it stored again).
    func insert(_ upload: Upload, idempotency: IdempotencyKey?) async throws -> IdempotencyKey.Outcome<Upload> {
        try await client.withUserTransaction(userID: upload.userID.lowercased, logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO uploads (id, user_id, blob_key, format, width, height, bytes, idempotency_key, request_hash)
                VALUES (\(upload.id), \(upload.userID), \(upload.key), \(upload.format), \(upload.width), \(upload.height), \(upload.bytes),
                        \(idempotency?.key), \(idempotency?.requestHash))
                ON CONFLICT (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id
                """,
                logger: logger
            ).collect()
            guard inserted.isEmpty, let idempotency else { return .created(upload) }
            let earlier = try await connection.query(
                """
                SELECT \(unescaped: Self.uploadColumns) FROM uploads
                WHERE user_id = \(upload.userID) AND idempotency_key = \(idempotency.key) AND request_hash = \(idempotency.requestHash)
                """,
                logger: logger
            ).collect().first
            return try earlier.map { .replayed(try Self.upload($0)) } ?? .keyReused
        }
    }

    func upload(_ id: UUID, user: UUID) async throws -> Upload? {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query("SELECT \(unescaped: Self.uploadColumns) FROM uploads WHERE id = \(id)", logger: logger)
                .collect().first.map(Self.upload)
        }
    }

    private static let uploadColumns = "id, user_id, blob_key, format, width, height, bytes"

    private static func upload(_ row: PostgresRow) throws -> Upload {
        let (id, user, key, format, width, height, bytes) = try row.decode((UUID, UUID, String, String, Int, Int, Int).self)
        return Upload(id: id, userID: user, key: key, format: format, width: width, height: height, bytes: bytes)
    }

    // MARK: Rows

    /// An edit's row, its Unsplash reference and its upload's row (row-level security shows only
    /// the owner's).
    static let columns = """
        id, user_id, source::text, filters::text, output::text, status, width, height, bytes, quality, result_key, failure_reason, created_at, finished_at, \
        original::text, \
        (SELECT json_build_object('key', u.blob_key, 'format', u.format, 'width', u.width, 'height', u.height, 'bytes', u.bytes)::text \
         FROM uploads u WHERE u.id = (edits.source ->> 'uploadId')::uuid)
        """

    static func decode(_ row: PostgresRow) throws -> Edit {
        let (id, user, source, filters, output, status, width, height, bytes, quality, key, reason, created, finished, reference, upload) =
            try row.decode((UUID, UUID, String, String, String, String, Int?, Int?, Int?, Int?, String?, String?, Date, Date?, String?, String?).self)
        var result: Edit.Result?
        if let width, let height, let bytes, let quality, let key {
            result = Edit.Result(key: key, width: width, height: height, bytes: bytes, quality: quality)
        }
        var original: Edit.Original?
        if let upload {
            original = .upload(try JSONDecoder().decode(UploadedOriginal.self, from: Data(upload.utf8)))
        } else if let reference {
            original = .unsplash(try JSONDecoder().decode(OriginalReference.self, from: Data(reference.utf8)))
        }
        return Edit(
            id: id,
            userID: user,
            source: try EventJSON.decoder.decode(EditSource.self, from: Data(source.utf8)),
            original: original,
            filters: try EventJSON.decoder.decode([FilterStep].self, from: Data(filters.utf8)),
            output: try EventJSON.decoder.decode(EditOutput.self, from: Data(output.utf8)),
            status: Edit.Status(rawValue: status) ?? .queued,
            result: result,
            failureReason: reason,
            createdAt: created,
            finishedAt: finished
        )
    }
}
