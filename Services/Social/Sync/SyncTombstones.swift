import Foundation
import Logging
import PostgresNIO
import ResourceAPI
import ServiceAssembly

extension PostgresConnection {
    /// The keys of `list` gone for `owner` since the request's token (`DeltaSync`: social's lists
    /// leave their tombstones in `sync_tombstones`), on a sync's first page only.
    func syncDeleted(list: String, owner: UUID, request: SyncRequest, logger: Logger) async throws -> [String] {
        guard let since = request.since, request.cursor == nil else { return [] }
        let rows = try await query(
            """
            SELECT key FROM sync_tombstones
            WHERE owner_id = \(owner) AND list = \(list)
              AND \(changedAfter: since)
            ORDER BY key
            """,
            logger: logger
        )
        var keys: [String] = []
        for try await key in rows.decode(String.self) { keys.append(key) }
        return keys
    }
}
