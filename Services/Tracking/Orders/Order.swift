import Contracts
import Database
import Foundation
import KeySetClient
import PostgresNIO

/// An order as the API shows it.
struct Order: Codable, Sendable, Equatable {
    struct Change: Codable, Sendable, Equatable {
        var status: OrderStatus
        var at: Date
        var by: OrderActor
        var reason: String?
    }

    var id: UUID
    /// `nil` once the customer's account was deleted (`UserErasure`): the order stays in the
    /// restaurant's books without them, and without its dropoff.
    var customerId: UUID?
    var restaurantId: UUID
    var restaurantOwnerId: UUID
    var driverId: UUID?
    var items: [OrderItem]
    var totalCents: Int
    var dropoff: Dropoff?
    var notes: String
    var status: OrderStatus
    var statusHistory: [Change]
    var etaSeconds: Int?
    var routing: String
    var version: Int
    var createdAt: Date
    var updatedAt: Date

    /// How many items the order holds.
    var itemCount: Int { items.itemCount }

    /// `columns`, then the restaurant's name as the order was placed: what its events carry, and
    /// the API does not show.
    static var columnsWithRestaurantName: String { columns + ", restaurant_name" }

    /// The order of a row read with `columnsWithRestaurantName`, and that name.
    static func withRestaurantName(_ row: PostgresRow) throws -> (order: Order, restaurantName: String?) {
        let cells = row.makeRandomAccess()
        return (try Order(row: row), try cells[cells.count - 1].decode(String?.self))
    }

    static let columns = """
        id, customer_id, restaurant_id, restaurant_owner_id, driver_id, items::text, total_cents, dropoff_address, dropoff_lat, dropoff_lng,
        notes, status, status_history::text, eta_seconds, routing, version, created_at, updated_at
        """

    init(row: PostgresRow) throws {
        var cells = row.makeIterator()
        func next<Value: PostgresDecodable>(_: Value.Type = Value.self) throws -> Value {
            guard let cell = cells.next() else { throw MissingRow(what: "a column of \(Order.columns)") }
            return try cell.decode(Value.self)
        }
        id = try next()
        customerId = try next()
        restaurantId = try next()
        restaurantOwnerId = try next()
        driverId = try next()
        items = try EventJSON.decoder.decode([OrderItem].self, from: Data(try next(String.self).utf8))
        totalCents = try next()
        let (address, lat, lng): (String, Double?, Double?) = (try next(), try next(), try next())
        dropoff = lat.flatMap { lat in lng.map { Dropoff(address: address, lat: lat, lng: $0) } }
        notes = try next()
        let statusText: String = try next()
        guard let status = OrderStatus(rawValue: statusText) else { throw UnknownStatus(text: statusText) }
        self.status = status
        statusHistory = try EventJSON.decoder.decode([Change].self, from: Data(try next(String.self).utf8))
        etaSeconds = try next()
        routing = try next()
        version = try next()
        createdAt = try next()
        updatedAt = try next()
    }

    struct UnknownStatus: Error {
        var text: String
    }

    /// Its parties, as its events carry them. An erased customer's order has ended and says no
    /// more, so the nil UUID standing in for them is never published.
    var parties: OrderParties {
        OrderParties(
            customerId: customerId ?? UserErasure.nobody,
            restaurantId: restaurantId,
            restaurantOwnerId: restaurantOwnerId,
            driverId: driverId
        )
    }

    /// The v1 status a v1 consumer last heard of (the last move of the history v1 can say).
    var lastV1Status: OrderStatusV1 {
        statusHistory.compactMap { OrderStatusV1($0.status) }.last ?? .placed
    }

    /// How `caller` takes part in this order, `nil` when they do not (the order is then 404 to them).
    func party(of caller: Caller) -> OrderMachine.Party? {
        if caller.isAdmin { return .admin }
        if caller.id == customerId { return .customer }
        if caller.id == restaurantOwnerId { return .restaurant }
        if caller.id == driverId { return .driver }
        return nil
    }
}
