import Database
import Foundation
import Logging
import PostgresNIO
import ResourceAPI
import ServiceAssembly
import ServiceKit

/// What every delta-synced list of social reads besides its rows (`DeltaSync`): the answer's
/// token, and the keys gone since the caller's.
struct SyncReads: Sendable {
    let logger: Logger

    /// This answer's token: the one its first page gave, or the snapshot now (read before the
    /// rows, in a statement of its own: a change committed while they are read comes again next
    /// time, never missed).
    func token(list: String, owner: UUID, request: SyncRequest, on connection: PostgresConnection) async throws -> SyncToken {
        try await connection.syncToken(request.pinned, list: list, owner: owner.lowercased, logger: logger)
    }

    /// The keys of `list` gone for `owner` since the request's token: on a sync's first page only.
    func deleted(list: String, owner: UUID, request: SyncRequest, on connection: PostgresConnection) async throws -> [String] {
        guard let since = request.since, request.cursor == nil else { return [] }
        let rows = try await connection.query(
            """
            SELECT key FROM sync_tombstones
            WHERE owner_id = \(owner) AND list = \(list)
              AND sync_xid >= pg_snapshot_xmin(\(since.snapshot)::pg_snapshot) AND NOT pg_visible_in_snapshot(sync_xid, \(since.snapshot)::pg_snapshot)
            ORDER BY key
            """,
            logger: logger
        )
        var keys: [String] = []
        for try await key in rows.decode(String.self) { keys.append(key) }
        return keys
    }

    /// The position after a row of a sync's answer: its writer's transaction and its key.
    static func position(xid: String, key: String) -> PageCursor {
        PageCursor(time: Date(timeIntervalSince1970: 0), key: "\(xid) \(key)")
    }

    /// A sync cursor's transaction and key.
    /// - Throws: 422 for a cursor of a list's first answer given to a sync.
    static func after(_ cursor: PageCursor) throws -> (xid: String, key: String) {
        let parts = cursor.key.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, UInt64(parts[0]) != nil else {
            throw Problem.validation([FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of a previous page of this sync")])
        }
        return (String(parts[0]), String(parts[1]))
    }
}
