import Database
import Logging
import PostgresNIO
import ResourceAPI

extension PostgresConnection {
    /// A list answer's sync token (`DeltaSync`): `pinned`, the one its first page gave, or the
    /// snapshot now — read before the rows, in a statement of its own, so a change committed while
    /// they are read comes again next time, never missed.
    package func syncToken(_ pinned: SyncToken?, list: String, owner: String, logger: Logger) async throws -> SyncToken {
        if let pinned { return pinned }
        let snapshot = try await query(PostgresQuery(unsafeSQL: DeltaSync.snapshotQuery), logger: logger).collect()
            .first("the snapshot").decode(String.self)
        return SyncToken(list: list, owner: owner, snapshot: snapshot)
    }
}

extension PostgresQuery.StringInterpolation {
    /// `DeltaSync.changedAfter` of `token`'s snapshot, bound as a parameter.
    package mutating func appendInterpolation(changedAfter token: SyncToken) {
        appendLiteral("sync_xid >= pg_snapshot_xmin(")
        appendInterpolation(token.snapshot)
        appendLiteral("::pg_snapshot) AND NOT pg_visible_in_snapshot(sync_xid, ")
        appendInterpolation(token.snapshot)
        appendLiteral("::pg_snapshot)")
    }
}
