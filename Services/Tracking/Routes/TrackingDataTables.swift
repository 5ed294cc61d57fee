import Contracts
import DataAPI
import Foundation
import Identity
import KeySetClient
import Logging
import PostgresNIO
import ResourceAPI
import ServiceKit

/// tracking's tables under `/rest/v1`: `restaurants` (anyone reads; owners and admins update) and
/// `orders` (their parties read; customers insert, as `POST /v1/orders` does), and the function
/// `rpc/advance_order`, the one way an order's status moves here: the typed API's transition.
struct TrackingDataTables {
    let restaurants: RestaurantStore
    let orders: OrderStore
    /// Reads as the caller: an anonymous one sees no order (each names its parties).
    let read: DataReader
    /// Reads restaurants, which anyone may: an anonymous caller reads as the service (this source
    /// and these columns are all it reaches).
    let readRestaurants: DataReader

    init(client: PostgresClient, restaurants: RestaurantStore, orders: OrderStore, logger: Logger) {
        self.restaurants = restaurants
        self.orders = orders
        self.read = client.dataReader(logger: logger) { caller in Self.caller(caller)?.settings ?? [] }
        self.readRestaurants = client.dataReader(logger: logger) { caller in Self.caller(caller)?.settings ?? [(name: "app.service", value: "on")] }
    }

    static func caller(_ caller: DataCaller) -> Caller? {
        guard let claims = caller.claims, let id = claims.userID else { return nil }
        return Caller(id: id, role: UserRole(rawValue: claims.splashRole) ?? .customer)
    }

    private static func signedIn(_ caller: DataCaller) throws(DataAPIError) -> Caller {
        guard let caller = Self.caller(caller) else {
            throw DataAPIError(.unauthorized, code: "42501", message: "permission denied: sign in to write")
        }
        return caller
    }

    var tables: [DataTable] { [restaurantsTable, ordersTable] }
    var functions: [DataFunction] { [advanceOrder] }

    // MARK: restaurants

    private var restaurantsTable: DataTable {
        let description = TableDescription(
            name: "restaurants",
            source: "restaurants",
            columns: [
                .init("id", .uuid), .init("owner_id", .uuid), .init("name", .text, writable: true), .init("amenity", .text),
                .init("cuisine", .text, writable: true), .init("address", .text, writable: true),
                .init("lat", .numeric, writable: true), .init("lng", .numeric, writable: true),
                .init("image_url", .text, writable: true), .init("opening_hours", .jsonb, writable: true),
                .init("is_open", .boolean, writable: true), .init("menu", .jsonb), .init("version", .integer),
                .init("created_at", .timestamptz), .init("updated_at", .timestamptz),
            ],
            primaryKey: ["id"],
            defaultOrder: [.init(column: "created_at"), .init(column: "id")]
        )
        return DataTable(
            description,
            read: readRestaurants,
            writes: DataWrites(
                update: { [restaurants] key, changes, caller in
                    let caller = try Self.signedIn(caller)
                    guard let id = key["id"]?.stringValue.flatMap(UUID.init(uuidString:)) else { return false }
                    // The typed API's body, from the row's columns.
                    var typed: [String: JSONValue] = [:]
                    let names = [
                        "name": "name", "cuisine": "cuisine", "address": "address", "image_url": "imageUrl", "opening_hours": "openingHours",
                        "is_open": "isOpen",
                    ]
                    for (column, value) in changes {
                        if let name = names[column] { typed[name] = value }
                    }
                    if changes["lat"] != nil || changes["lng"] != nil {
                        typed["location"] = .object(["lat": changes["lat"] ?? .null, "lng": changes["lng"] ?? .null])
                    }
                    var body = JSONObject(fields: typed, at: "")
                    let fields = try RestaurantChange(reading: &body).fields
                    do {
                        // At whatever version it has, as `If-Match: *` (PostgREST has no versions).
                        _ = try await restaurants.update(id, fields, expecting: nil, caller: caller)
                        return true
                    } catch let problem as Problem where problem.status == .forbidden || problem.status == .notFound {
                        return false
                    }
                }
            )
        )
    }

    // MARK: orders

    private static let ordersDescription = TableDescription(
        name: "orders",
        source: "orders",
        columns: [
            .init("id", .uuid), .init("customer_id", .uuid, writable: true), .init("restaurant_id", .uuid, writable: true),
            .init("driver_id", .uuid), .init("items", .jsonb, writable: true), .init("total_cents", .integer),
            .init("dropoff_address", .text, writable: true), .init("dropoff_lat", .numeric, writable: true),
            .init("dropoff_lng", .numeric, writable: true), .init("notes", .text, writable: true), .init("status", .text),
            .init("eta_seconds", .integer), .init("version", .integer), .init("created_at", .timestamptz), .init("updated_at", .timestamptz),
        ],
        primaryKey: ["id"],
        defaultOrder: [.init(column: "created_at", descending: true), .init(column: "id", descending: true)]
    )

    private var ordersTable: DataTable {
        DataTable(
            Self.ordersDescription,
            read: read,
            writes: DataWrites(
                insert: { [orders] rows, request in
                    let caller = try Self.signedIn(request.caller)
                    let placements = try rows.map { (row) throws -> (OrderStore.Placement, [UInt8]) in
                        if let customer = row["customer_id"], customer != .null,
                            customer.stringValue.flatMap(UUID.init(uuidString:)) != caller.id
                        {
                            throw DataAPIError.forbidden("new row violates row-level security policy for table \"orders\"")
                        }
                        // The typed API's body, from the row's columns: items as [{menu_item_id, quantity}].
                        var typed: [String: JSONValue] = ["restaurantId": row["restaurant_id"] ?? .null, "notes": row["notes"] ?? .string("")]
                        if case .array(let items)? = row["items"] {
                            typed["items"] = .array(
                                items.map { item in
                                    guard case .object(var fields) = item else { return item }
                                    if let id = fields.removeValue(forKey: "menu_item_id") { fields["menuItemId"] = id }
                                    return .object(fields)
                                }
                            )
                        } else {
                            typed["items"] = row["items"] ?? .null
                        }
                        typed["dropoff"] = .object([
                            "address": row["dropoff_address"] ?? .null, "lat": row["dropoff_lat"] ?? .null, "lng": row["dropoff_lng"] ?? .null,
                        ])
                        var body = JSONObject(fields: typed, at: "")
                        return (try NewOrder(reading: &body).placement, Array((try? JSONEncoder().encode(row)) ?? Data()))
                    }
                    var written: [[String: JSONValue]] = []
                    for (placement, bytes) in placements {
                        switch try await orders.place(placement, caller: caller, key: IdempotencyKey(key: UUID().uuidString, body: bytes)) {
                        case .created(let order), .replayed(let order): written.append(["id": .string(order.id.lowercased)])
                        case .keyReused: break
                        }
                    }
                    return written
                }
            )
        )
    }

    // MARK: rpc/advance_order

    /// `{"order_id", "to", "if_version"?, "reason"?, "driver_id"?}` → the order's row after the
    /// move; without `if_version`, the move applies to the order as it is now.
    private var advanceOrder: DataFunction {
        let table = ordersTable
        return DataFunction(name: "advance_order") { [orders] arguments, dataCaller in
            let caller = try Self.signedIn(dataCaller)
            var body = JSONObject(fields: arguments, at: "")
            let id = body.uuid("order_id", required: true)
            let to = body.text("to", required: true, maxCharacters: 40)
            let version = body.integer("if_version", required: false, in: 1...Int(Int32.max))
            let reason = body.text("reason", required: false, maxCharacters: OrdersController.maxNotes)
            let driver = body.uuid("driver_id", required: false)
            let status = to.flatMap(OrderStatus.init(rawValue:))
            if to != nil, status == nil { body.fail("to", "to: one of \(OrderStatus.allCases.map(\.rawValue).joined(separator: ", "))") }
            let (orderID, move) = try body.validated(id, status)
            let order = try await orders.move(orderID, to: move, reason: reason, driver: driver, expecting: version, caller: caller)
            let (json, _) = try await table.read(dataCaller, [try table.renderer.read(DataQuery(), keys: [["id": .string(order.id.lowercased)]])])[0][
                0
            ]
            .decode((String, Int).self)
            guard case .array(let rows) = try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)), let row = rows.first else { return .null }
            return row
        }
    }
}
