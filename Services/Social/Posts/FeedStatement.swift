import Database
import Foundation
import PostgresNIO

/// Which posts a feed query reads; each variant is a statement of its own, prepared once per
/// connection, so Postgres plans it once (planning the cards' joins and policies costs several
/// times what running them does), and no index condition hides behind an OR.
protocol FeedVariant: Sendable {
    /// Conditions on `p` after the viewer's (parameters from `$2`; `$1` is the viewer).
    static var condition: String { get }
    /// The number of the `LIMIT` parameter.
    static var limitParameter: Int { get }
}

enum FeedFirstPage: FeedVariant {
    static let condition = ""
    static let limitParameter = 2
}

enum FeedLaterPage: FeedVariant {
    static let condition = "AND (p.created_at, p.id) < ($2, $3)"
    static let limitParameter = 4
}

enum AuthorFirstPage: FeedVariant {
    static let condition = "AND p.user_id = $2"
    static let limitParameter = 3
}

enum AuthorLaterPage: FeedVariant {
    static let condition = "AND p.user_id = $2 AND (p.created_at, p.id) < ($3, $4)"
    static let limitParameter = 5
}

enum OnePost: FeedVariant {
    static let condition = "AND p.id = $2"
    static let limitParameter = 3
}

/// A page of post cards (the `post_cards` view) and whether the viewer likes each, in one round
/// trip and one statement: its first step sets the viewer for row-level security
/// (transaction-local: the statement's own transaction), and the cards are read in a lateral
/// step that depends on it, so every policy is checked after it (were it ever checked before, it
/// would see no viewer and show nothing: the statement fails closed). Whether the viewer likes a
/// post is a lateral lookup of the like's primary key per post: as a join or an `EXISTS`, a plan
/// made without knowing the viewer (a cached one) reads all the viewer's likes and compares every
/// post with each.
struct FeedStatement<Variant: FeedVariant>: PostgresPreparedStatement {
    typealias Row = (UUID, UUID, String?, String?, String, String, String?, String?, Int, Int, Int, Date, String?, Bool)

    static var name: String { "social-feed-\(Variant.self)" }

    static var sql: String {
        """
        SELECT page.* FROM (SELECT set_config('app.user_id', $1::text, true) AS viewer) AS reader
        CROSS JOIN LATERAL (
            SELECT p.*, l.liked IS NOT NULL FROM post_cards p
            LEFT JOIN LATERAL (SELECT true AS liked FROM likes WHERE likes.user_id = $1 AND likes.photo_key = p.photo_key LIMIT 1) l ON true
            WHERE reader.viewer IS NOT NULL \(Variant.condition)
            ORDER BY p.created_at DESC, p.id DESC LIMIT $\(Variant.limitParameter)
        ) AS page
        """
    }

    let bindings: PostgresBindings

    /// - Parameter values: the variant's parameters after the viewer, in order, then the limit.
    init(viewer: UUID, _ values: [any PostgresEncodable & Sendable]) throws {
        var bindings = PostgresBindings()
        bindings.append(viewer)
        for value in values { try bindings.append(value) }
        self.bindings = bindings
    }

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
