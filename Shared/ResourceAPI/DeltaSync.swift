import Foundation
import Hummingbird
import Identity
import ServiceKit

/// Offline sync for a list an app keeps: every answer carries a `syncToken`, and `?since=<token>`
/// answers exactly what changed after it — the items changed (created or updated) and the keys of
/// those gone (`deleted`).
///
/// How changes are found without numbering them under a lock: each row keeps the id of the
/// transaction that last wrote it (`sync_xid xid8`, set by the schema's `sync_touch` trigger), and
/// each deletion leaves a tombstone with its own (`sync_tombstones`). A token is the database
/// snapshot an answer was read in (`pg_current_snapshot()`); a row changed after it is one whose
/// writer that snapshot did not see (`DeltaSync.changedAfter`). Transactions commit in any order
/// and none waits for another: a writer that was still running when the token was taken is, by
/// definition, invisible to it, so its change comes in the next answer.
package enum DeltaSync {
    /// How long tombstones are kept, and so how old a token may be (older: 410, start over).
    package static let tombstoneLifetime: TimeInterval = 30 * 24 * 3_600

    /// The SQL that takes a token's snapshot: run it before reading the list (in its own
    /// statement, so a change committed while the list is read comes again next time — never
    /// missed, at most repeated).
    package static let snapshotQuery = "SELECT pg_current_snapshot()::text"

    /// The condition of a row (or tombstone) whose `sync_xid` the snapshot `snapshot` (an SQL
    /// expression of type `pg_snapshot`, such as `$3::pg_snapshot`) did not see: written after it.
    /// The first half is what an index on `sync_xid` serves; the second, the exact answer.
    package static func changedAfter(_ snapshot: String) -> String {
        "sync_xid >= pg_snapshot_xmin(\(snapshot)) AND NOT pg_visible_in_snapshot(sync_xid, \(snapshot))"
    }

    /// 410 `sync_token_expired`: the token is older than the tombstones kept.
    package static let expired = Problem(
        status: .gone,
        type: "sync_token_expired",
        title: "Sync token expired",
        detail: "The token is older than the 30 days of deletions kept: load the list again without since."
    )
}

/// A list answer's sync token: which list, whose (a user id, or `*` for a public list), when it was
/// issued and the snapshot it was read in. Opaque to clients (`v1.` and base64url).
package struct SyncToken: Sendable, Equatable, CustomStringConvertible {
    package var list: String
    package var owner: String
    /// Seconds since 1970.
    package var issuedAt: Int64
    /// `pg_snapshot` text: `xmin:xmax:xip,…`.
    package var snapshot: String

    package init(list: String, owner: String, issuedAt: Date = Date(), snapshot: String) {
        self.list = list
        self.owner = owner
        self.issuedAt = Int64(issuedAt.timeIntervalSince1970)
        self.snapshot = snapshot
    }

    /// `nil` for text no answer gave: not `v1.`, not base64url, or not four fields with a snapshot
    /// of Postgres's shape.
    package init?(_ text: String) {
        guard text.hasPrefix("v1."), let data = Base64URL.decode(text.dropFirst(3)), let decoded = String(data: data, encoding: .utf8)
        else { return nil }
        let parts = decoded.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, !parts[0].isEmpty, !parts[1].isEmpty, let issued = Int64(parts[2]), Self.isSnapshot(parts[3]) else { return nil }
        list = String(parts[0])
        owner = String(parts[1])
        issuedAt = issued
        snapshot = String(parts[3])
    }

    package var description: String {
        "v1." + Base64URL.encode(Array("\(list)|\(owner)|\(issuedAt)|\(snapshot)".utf8))
    }

    /// `xmin:xmax:` and a comma-separated list of transaction ids, each a number (what
    /// `pg_current_snapshot()::text` writes; anything else would be an SQL error, not a 400).
    static func isSnapshot(_ text: Substring) -> Bool {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, let xmin = UInt64(fields[0]), let xmax = UInt64(fields[1]), xmin <= xmax else { return false }
        return fields[2].isEmpty || fields[2].split(separator: ",", omittingEmptySubsequences: false).allSatisfy { UInt64($0) != nil }
    }
}

/// What a list request asks of its sync: the token it syncs from (`since`), the page it continues
/// (`cursor`, which carries the token of the answer's first page, so every page of one answer
/// gives the same token), and how many items.
package struct SyncRequest: Sendable {
    package var since: SyncToken?
    package var limit: Int
    /// The position after the previous page's last row.
    package var cursor: PageCursor?
    /// The token the first page of this answer gave.
    package var pinned: SyncToken?

    /// Reads `since`, `cursor` and `limit` for `list` of `owner`.
    /// - Throws: 422 naming `since`, `cursor` or `limit` when one is not what an answer gave (a
    ///   forged token, or another user's or list's); 410 `sync_token_expired` for a token older
    ///   than the tombstones kept.
    package init(_ request: Request, list: String, owner: String, now: Date = Date(), defaultLimit: Int = 20, maxLimit: Int = 100) throws {
        let query = request.uri.queryParameters
        limit = try PageRequest.limit(request, defaultLimit: defaultLimit, maxLimit: maxLimit)
        var errors: [FieldError] = []
        if let text = query.get("since"), !text.isEmpty {
            if let token = SyncToken(text), token.list == list, token.owner == owner {
                since = token
            } else {
                errors.append(FieldError(.parameter("since"), "since: the syncToken an earlier answer of this list gave you"))
            }
        }
        if let text = query.get("cursor"), !text.isEmpty {
            let parts = text.split(separator: "~", maxSplits: 1)
            if parts.count == 2, let position = PageCursor(String(parts[0])), let token = SyncToken(String(parts[1])), token.list == list,
                token.owner == owner
            {
                cursor = position
                pinned = token
            } else {
                errors.append(FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of a previous page"))
            }
        }
        if !errors.isEmpty { throw Problem.validation(errors) }
        if let since, Double(since.issuedAt) < now.timeIntervalSince1970 - DeltaSync.tombstoneLifetime { throw DeltaSync.expired }
    }

    package init(since: SyncToken? = nil, limit: Int = 20, cursor: PageCursor? = nil, pinned: SyncToken? = nil) {
        self.since = since
        self.limit = limit
        self.cursor = cursor
        self.pinned = pinned
    }

    /// The position after a row of a sync's answer: its writer's transaction and its key.
    package static func position(xid: String, key: String) -> PageCursor {
        PageCursor(time: Date(timeIntervalSince1970: 0), key: "\(xid) \(key)")
    }

    /// Where a sync's page starts: after the previous page's last row, its writer's transaction
    /// and key (`nil` on a first page).
    /// - Throws: 422 naming `cursor` for a cursor that is not one of a sync's pages.
    package func syncPosition() throws -> (xid: String, key: String)? {
        guard let cursor else { return nil }
        let parts = cursor.key.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, UInt64(parts[0]) != nil else { throw Self.notASyncCursor }
        return (String(parts[0]), String(parts[1]))
    }

    /// `syncPosition` of a list keyed by id.
    package func syncPositionByID() throws -> (xid: String, id: UUID)? {
        guard let (xid, key) = try syncPosition() else { return nil }
        guard let id = UUID(uuidString: key) else { throw Self.notASyncCursor }
        return (xid, id)
    }

    private static let notASyncCursor = Problem.validation([
        FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of a previous page of this sync")
    ])

    /// The page of `rows` (fetched with `limit + 1`) and the next page's cursor, which carries
    /// `token`.
    package func page<Row>(of rows: [Row], token: SyncToken, position: (Row) -> PageCursor) -> (items: ArraySlice<Row>, next: String?) {
        let items = rows.prefix(limit)
        guard rows.count > limit, let last = items.last else { return (items, nil) }
        return (items, position(last).description + "~" + token.description)
    }
}

/// A sync answer: `{"items":[…],"deleted":[keys],"nextCursor":…,"syncToken":…}`. `deleted` names
/// what the list's items are keyed by; it is empty on an answer without `since` and on the pages
/// after a sync's first. Stores give pages of domain values; routes map them to their bodies.
package struct SyncPage<Item: Sendable>: Sendable {
    package var items: [Item]
    package var deleted: [String]
    package var nextCursor: String?
    package var syncToken: SyncToken

    package init(items: [Item], deleted: [String], nextCursor: String?, syncToken: SyncToken) {
        self.items = items
        self.deleted = deleted
        self.nextCursor = nextCursor
        self.syncToken = syncToken
    }

    /// The same answer, each item made into another.
    package func map<Other: Sendable>(_ transform: (Item) throws -> Other) rethrows -> SyncPage<Other> {
        SyncPage<Other>(items: try items.map(transform), deleted: deleted, nextCursor: nextCursor, syncToken: syncToken)
    }
}

extension SyncPage: Encodable where Item: Encodable {
    private enum CodingKeys: String, CodingKey { case items, deleted, nextCursor, syncToken }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(deleted, forKey: .deleted)
        try container.encode(nextCursor, forKey: .nextCursor)
        try container.encode(syncToken.description, forKey: .syncToken)
    }
}
