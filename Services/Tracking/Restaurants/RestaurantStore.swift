import Contracts
import Database
import EventBus
import Foundation
import Identity
import KeySetClient
import Logging
import PostgresNIO
import ResourceAPI
import ServiceAssembly
import ServiceKit

/// Restaurants and their menus.
struct RestaurantStore: Sendable {
    let client: PostgresClient
    /// `tracking.restaurant.changed.v1`, in the transaction of each change.
    let outbox: Outbox
    let logger: Logger

    static func notFound(_ id: UUID) -> Problem {
        Problem(status: .notFound, type: "restaurant-not-found", title: "Restaurant not found", detail: "No restaurant has the id \(id.lowercased).")
    }

    /// What a list asks for.
    struct Query: Sendable {
        var near: Restaurant.Location?
        var radiusMetres: Double?
        var cuisine: String?
        var open: Bool?
        var limit: Int
        var cursor: ListCursor?
    }

    /// A page position: after a restaurant (its creation time or its distance, and its id).
    struct ListCursor: Sendable, Equatable, CustomStringConvertible {
        var order: Double
        var id: UUID

        init(order: Double, id: UUID) {
            self.order = order
            self.id = id
        }

        init?(_ text: String) {
            guard let data = Base64URL.decode(Substring(text)), let decoded = String(data: data, encoding: .utf8),
                let bar = decoded.firstIndex(of: "|"),
                let order = Double(decoded[..<bar]), order.isFinite, let id = UUID(uuidString: String(decoded[decoded.index(after: bar)...]))
            else { return nil }
            self.order = order
            self.id = id
        }

        var description: String {
            Base64URL.encode(Array("\(order)|\(id.lowercased)".utf8))
        }
    }

    /// Great-circle metres from ($1, $2) to the row's position, in SQL. Every coordinate is first
    /// rounded to 1e-9 degrees (0.1 mm): Postgres reports a float8 product that underflows as an
    /// error, and coordinates a hair from zero (1e-200) made one.
    private static let distanceSQL: String = {
        func snapped(_ value: String) -> String { "round((\(value))::numeric, 9)::float8" }
        let (lat, lng, nearLat, nearLng) = (snapped("lat"), snapped("lng"), snapped("$1"), snapped("$2"))
        return "6371008.8 * 2 * asin(least(1, sqrt(power(sin(radians(\(lat) - \(nearLat)) / 2), 2) + cos(radians(\(nearLat))) "
            + "* cos(radians(\(lat))) * power(sin(radians(\(lng) - \(nearLng)) / 2), 2))))"
    }()

    /// A page of restaurants: nearest first with `near`, else oldest first; every answer with the
    /// token of its first page (`pinned`, else the snapshot now: `DeltaSync`).
    func list(_ query: Query, pinned: SyncToken?, caller: Caller) async throws -> (items: [Restaurant], next: ListCursor?, token: SyncToken) {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            let token = try await Self.token(pinned, on: connection, logger: logger)
            var bindings = PostgresBindings()
            var conditions: [String] = []
            let order: String
            if let near = query.near {
                bindings.append(near.lat)
                bindings.append(near.lng)
                order = "(\(Self.distanceSQL))"
                if let radius = query.radiusMetres {
                    bindings.append(radius)
                    conditions.append("\(order) <= $\(bindings.count)")
                }
            } else {
                order = "extract(epoch FROM created_at)::float8"
            }
            if let cuisine = query.cuisine {
                bindings.append(cuisine.lowercased())
                conditions.append("lower(cuisine) = $\(bindings.count)")
            }
            if let open = query.open {
                bindings.append(open)
                conditions.append("is_open = $\(bindings.count)")
            }
            if let cursor = query.cursor {
                bindings.append(cursor.order)
                bindings.append(cursor.id)
                conditions.append("(\(order), id) > ($\(bindings.count - 1), $\(bindings.count))")
            }
            bindings.append(query.limit + 1)
            let sql = """
                SELECT \(Restaurant.columns), \(order) AS ordering FROM restaurants
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
                ORDER BY ordering, id LIMIT $\(bindings.count)
                """
            var items: [Restaurant] = []
            var orders: [Double] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger) {
                let ordering = try row.makeRandomAccess()[14].decode(Double.self)
                items.append(try Restaurant(row: row, distance: query.near == nil ? nil : ordering))
                orders.append(ordering)
            }
            guard items.count > query.limit else { return (items, nil, token) }
            items.removeLast()
            return (items, ListCursor(order: orders[query.limit - 1], id: items[query.limit - 1].id), token)
        }
    }

    /// The restaurants changed (created, edited, their menus replaced) after `request`'s token, in
    /// the order of their writers; restaurants are never deleted, so nothing is gone.
    func changes(_ request: SyncRequest, caller: Caller) async throws -> SyncPage<Restaurant> {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            let token = try await Self.token(request.pinned, on: connection, logger: logger)
            guard let since = request.since else { return SyncPage(items: [], deleted: [], nextCursor: nil, syncToken: token) }
            let after = try request.syncPositionByID()
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Restaurant.columns), sync_xid::text FROM restaurants
                WHERE \(changedAfter: since)
                  AND (\(after == nil) OR (sync_xid, id) > (\(after?.0 ?? "0")::xid8, \(after?.1 ?? UUID())))
                ORDER BY sync_xid, id LIMIT \(request.limit + 1)
                """,
                logger: logger
            ).collect()
            let found = try rows.map { (try Restaurant(row: $0), try $0.makeRandomAccess()[14].decode(String.self)) }
            let (items, next) = request.page(of: found, token: token) {
                SyncRequest.position(xid: $0.1, key: $0.0.id.lowercased)
            }
            return SyncPage(items: items.map(\.0), deleted: [], nextCursor: next, syncToken: token)
        }
    }

    /// The answer's token: the one its first page gave, or one of the public list taken now.
    private static func token(_ pinned: SyncToken?, on connection: PostgresConnection, logger: Logger) async throws -> SyncToken {
        try await connection.syncToken(pinned, list: "restaurants", owner: "*", logger: logger)
    }

    func restaurant(_ id: UUID, caller: Caller) async throws -> Restaurant {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            guard
                let row = try await connection.query("SELECT \(unescaped: Restaurant.columns) FROM restaurants WHERE id = \(id)", logger: logger)
                    .collect().first
            else {
                throw Self.notFound(id)
            }
            return try Restaurant(row: row)
        }
    }

    /// What a restaurant is made with or changed to; `nil` leaves a field as it is.
    struct Fields: Sendable {
        var ownerId: UUID?
        var name: String?
        var cuisine: String??
        var address: String?
        var location: Restaurant.Location?
        var imageUrl: String??
        var openingHours: [String: String]??
        var isOpen: Bool?
        var menu: [MenuItem]?
    }

    /// An admin makes a restaurant for an owner.
    func create(_ fields: Fields, caller: Caller) async throws -> Restaurant {
        try caller.require(.admin, to: "create restaurants")
        guard let owner = fields.ownerId, let name = fields.name, let location = fields.location else {
            throw Problem.validation([FieldError(.body(pointer: "/ownerId"), "ownerId, name and location are required")])
        }
        let menu = try String(decoding: JSONEncoder().encode(fields.menu ?? []), as: UTF8.self)
        let hours = try (fields.openingHours ?? nil).map { try String(decoding: JSONEncoder().encode($0), as: UTF8.self) }
        return try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            let row = try await connection.query(
                """
                INSERT INTO restaurants (id, owner_id, name, cuisine, address, lat, lng, image_url, opening_hours, is_open, menu)
                VALUES (\(UUID()), \(owner), \(name), \(fields.cuisine ?? nil), \(fields.address ?? ""), \(location.lat), \(location.lng),
                        \(fields.imageUrl ?? nil), \(hours)::jsonb, \(fields.isOpen ?? true), \(menu)::jsonb)
                RETURNING \(unescaped: Restaurant.columns)
                """,
                logger: logger
            ).collect().first("the restaurant created")
            let restaurant = try Restaurant(row: row)
            try await announce(restaurant, .created, on: connection)
            return restaurant
        }
    }

    /// The owner or an admin changes a restaurant at the version they read (`If-Match`).
    func update(_ id: UUID, _ fields: Fields, expecting version: Int?, caller: Caller) async throws -> Restaurant {
        let menu = try fields.menu.map { try String(decoding: JSONEncoder().encode($0), as: UTF8.self) }
        let hours: String?? = try fields.openingHours.map { try $0.map { try String(decoding: JSONEncoder().encode($0), as: UTF8.self) } }
        return try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            // Read without a lock (only its owner and admins may lock it); the update below
            // applies only at the version read.
            guard
                let current = try await connection.query("SELECT owner_id, version FROM restaurants WHERE id = \(id)", logger: logger)
                    .collect().first?.decode((UUID, Int).self)
            else { throw Self.notFound(id) }
            guard current.0 == caller.id || caller.isAdmin else {
                throw Problem(
                    status: .forbidden,
                    type: "not-the-owner",
                    title: "Not your restaurant",
                    detail: "Only the restaurant's owner or an admin may change it."
                )
            }
            guard version == nil || current.1 == version else { throw Problem.stale(current: current.1) }
            let row = try await connection.query(
                """
                UPDATE restaurants SET
                    name = coalesce(\(fields.name), name),
                    cuisine = CASE WHEN \(fields.cuisine != nil) THEN \(fields.cuisine ?? nil) ELSE cuisine END,
                    address = coalesce(\(fields.address), address),
                    lat = coalesce(\(fields.location?.lat), lat), lng = coalesce(\(fields.location?.lng), lng),
                    image_url = CASE WHEN \(fields.imageUrl != nil) THEN \(fields.imageUrl ?? nil) ELSE image_url END,
                    opening_hours = CASE WHEN \(hours != nil) THEN \(hours ?? nil)::jsonb ELSE opening_hours END,
                    is_open = coalesce(\(fields.isOpen), is_open),
                    menu = coalesce(\(menu)::jsonb, menu),
                    version = version + 1, updated_at = clock_timestamp()
                WHERE id = \(id) AND version = \(current.1)
                RETURNING \(unescaped: Restaurant.columns)
                """,
                logger: logger
            ).collect().first
            // Changed by someone else between the read and the update.
            guard let row else { throw Problem.stale(current: current.1 + 1) }
            let restaurant = try Restaurant(row: row)
            try await announce(restaurant, .updated, on: connection)
            return restaurant
        }
    }

    private func announce(_ restaurant: Restaurant, _ change: RestaurantChanged.Change, on connection: PostgresConnection) async throws {
        let event = RestaurantChanged(
            restaurantId: restaurant.id,
            ownerId: restaurant.ownerId,
            change: change,
            name: restaurant.name,
            cuisine: restaurant.cuisine,
            isOpen: restaurant.isOpen,
            version: restaurant.version,
            changedAt: restaurant.updatedAt
        )
        try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
    }
}
