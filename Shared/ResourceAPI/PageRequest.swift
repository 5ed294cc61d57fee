import Foundation
import Hummingbird
import ServiceKit

/// `?limit=&cursor=` of a list endpoint: `limit` 1–100 (20 by default), `cursor` a `nextCursor` the
/// API gave. A bad value is a 422 naming the parameter.
package struct PageRequest: Sendable, Equatable {
    package var limit: Int
    package var cursor: PageCursor?

    package init(limit: Int = 20, cursor: PageCursor? = nil) {
        self.limit = limit
        self.cursor = cursor
    }

    package init(_ request: Request, defaultLimit: Int = 20, maxLimit: Int = 100) throws {
        let query = request.uri.queryParameters
        var errors: [FieldError] = []
        limit = defaultLimit
        if let error = Self.readLimit(request, into: &limit, maxLimit: maxLimit) { errors.append(error) }
        if let text = query.get("cursor"), !text.isEmpty {
            cursor = PageCursor(text)
            if cursor == nil { errors.append(FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of a previous page")) }
        }
        if !errors.isEmpty { throw Problem.validation(errors) }
    }

    /// `?limit=` alone, for a list whose cursor is of another kind.
    /// - Throws: 422 naming `limit` when it is not 1…`maxLimit`.
    package static func limit(_ request: Request, defaultLimit: Int = 20, maxLimit: Int = 100) throws -> Int {
        var limit = defaultLimit
        if let error = readLimit(request, into: &limit, maxLimit: maxLimit) { throw Problem.validation([error]) }
        return limit
    }

    private static func readLimit(_ request: Request, into limit: inout Int, maxLimit: Int) -> FieldError? {
        guard let text = request.uri.queryParameters.get("limit") else { return nil }
        guard let value = Int(text), (1...maxLimit).contains(value) else {
            return FieldError(.parameter("limit"), "limit: a whole number from 1 to \(maxLimit)")
        }
        limit = value
        return nil
    }

    /// The page of `rows` (fetched with `limit + 1`, to learn whether more follow) and the cursor of
    /// the next page, `nil` on the last.
    package func page<Row>(of rows: [Row], position: (Row) -> PageCursor) -> (items: ArraySlice<Row>, next: PageCursor?) {
        let items = rows.prefix(limit)
        return (items, rows.count > limit ? items.last.map(position) : nil)
    }
}

/// A page of a list: `{items, nextCursor}`, `nextCursor` null on the last page. Stores give pages
/// of domain values; routes map them to pages of the bodies they answer with.
package struct Page<Item: Sendable>: Sendable {
    package var items: [Item]
    package var nextCursor: String?

    package init(items: [Item], nextCursor: PageCursor?) {
        self.items = items
        self.nextCursor = nextCursor?.description
    }

    /// The same page, each item made into another (a domain value into its wire body).
    package func map<Other: Sendable>(_ transform: (Item) throws -> Other) rethrows -> Page<Other> {
        var page = Page<Other>(items: try items.map(transform), nextCursor: nil)
        page.nextCursor = nextCursor
        return page
    }
}

extension Page: Encodable where Item: Encodable {
    private enum CodingKeys: String, CodingKey { case items, nextCursor }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        // Present and null on the last page, as clients test for it.
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}
