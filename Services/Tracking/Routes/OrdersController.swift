import Contracts
import Foundation
import Hummingbird
import Identity
import KeySetClient
import ResourceAPI
import RoadNetwork
import ServiceKit

/// `/v1/orders`: placing (`Idempotency-Key`), reading, listing with delta sync, the moves of the
/// state machine and edits, both at the version the caller read (`If-Match`).
struct OrdersController: Sendable {
    let orders: OrderStore
    let positions: PositionIngest
    let keys: KeySetCache

    static let maxNotes = 500

    static let notFound = Problem(status: .notFound, type: "order-not-found", title: "Order not found", detail: "An order id is a UUID.")

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("orders", use: place)
            .get("orders", use: list)
            .get("orders/:id", use: show)
            .get("orders/:id/route", use: route)
            .post("orders/:id/transitions", use: move)
            .patch("orders/:id", use: edit)
    }

    @Sendable func place(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        var request = request
        let (new, key) = try await request.decodeCreation(as: NewOrder.self, what: "order", context: context)
        return try IdempotencyKey.response(try await orders.place(new.placement, caller: caller, key: key)) { order in
            try VersionTag.response(order, status: .created, version: order.version, headers: [.location: "/v1/orders/\(order.id.lowercased)"])
        }
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        return try JSONBody.response(.ok, try await orders.list(try Self.query(request, caller: caller), caller: caller))
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let order = try await orders.order(try context.parameters.uuid("id", orThrow: Self.notFound), caller: caller)
        return try VersionTag.response(order, version: order.version, request: request)
    }

    @Sendable func route(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let order = try await orders.order(try context.parameters.uuid("id", orThrow: Self.notFound), caller: caller)
        let pickup = try await orders.pickup(of: order)
        guard let route = try await positions.remainingRoute(of: order, pickup: pickup) else {
            throw Problem(
                status: .notFound,
                type: "no-route",
                title: "No route",
                detail: "The order has no dropoff any more: its customer's account was deleted."
            )
        }
        return try JSONBody.response(.ok, RemainingRoute(route))
    }

    @Sendable func move(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let id = try context.parameters.uuid("id", orThrow: Self.notFound)
        let version = try VersionTag.expected(request)
        var request = request
        let move = try await request.decodeBody(as: OrderMove.self, context: context)
        let order = try await orders.move(id, to: move.status, reason: move.reason, driver: move.driver, expecting: version, caller: caller)
        return try VersionTag.response(order, version: order.version)
    }

    @Sendable func edit(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let id = try context.parameters.uuid("id", orThrow: Self.notFound)
        let version = try VersionTag.expected(request)
        var request = request
        let change = try await request.decodeBody(as: OrderChange.self, context: context)
        let order = try await orders.edit(id, notes: change.notes, dropoff: change.dropoff, expecting: version, caller: caller)
        return try VersionTag.response(order, version: order.version)
    }

    static func query(_ request: Request, caller: Caller) throws -> OrderStore.ListQuery {
        let parameters = request.uri.queryParameters
        // A token of the numbered kind orders gave before the shared mechanism: start over.
        if let since = parameters.get("since"), since.hasPrefix("s"), Int64(since.dropFirst()) != nil { throw DeltaSync.expired }
        var errors: [FieldError] = []
        var query = OrderStore.ListQuery(
            role: caller.isAdmin ? nil : caller.role,
            sync: try SyncRequest(request, list: "orders", owner: caller.id.lowercased)
        )
        if let role = parameters.get("role") {
            switch UserRole(rawValue: role) {
            case .customer?, .restaurant?, .driver?: query.role = UserRole(rawValue: role)
            default: errors.append(FieldError(.parameter("role"), "role: customer, restaurant or driver"))
            }
        }
        if let status = parameters.get("status") {
            query.status = OrderStatus(rawValue: status)
            if query.status == nil {
                errors.append(FieldError(.parameter("status"), "status: one of \(OrderStatus.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
        }
        if !errors.isEmpty { throw Problem.validation(errors) }
        return query
    }
}

/// A new order, from `POST /v1/orders` or a `/rest/v1/orders` row; prices and totals a client
/// sends are ignored (the menu sets them).
struct NewOrder: JSONObjectBody {
    var placement: OrderStore.Placement

    init(reading body: inout JSONObject) throws {
        let restaurant = body.uuid("restaurantId", required: true)
        var items: [(menuItemId: String, quantity: Int)] = []
        switch body.fields["items"] {
        case .array(let values)? where (1...100).contains(values.count):
            for (index, value) in values.enumerated() {
                guard case .object(let fields) = value else {
                    body.fail("items/\(index)", "each item is {menuItemId, quantity}")
                    continue
                }
                var item = JSONObject(fields: fields, at: "/items/\(index)")
                let id = item.text("menuItemId", required: true, maxCharacters: 40, allowEmpty: false)
                let quantity = item.integer("quantity", required: true, in: 1...500)
                body.absorb(item)
                if let id, let quantity { items.append((id, quantity)) }
            }
        default:
            body.fail("items", "items: an array of 1 to 100 {menuItemId, quantity}")
        }
        let dropoff = Dropoff.read(&body, required: true)
        let notes = body.text("notes", required: false, maxCharacters: OrdersController.maxNotes) ?? ""
        let (restaurantID, place) = try body.validated(restaurant, dropoff)
        placement = OrderStore.Placement(restaurantId: restaurantID, items: items, dropoff: place, notes: notes)
    }
}

/// A move of an order's state machine (`POST /v1/orders/{id}/transitions`).
struct OrderMove: JSONObjectBody {
    var status: OrderStatus
    var reason: String?
    var driver: UUID?

    init(reading body: inout JSONObject) throws {
        let to = body.text("to", required: true, maxCharacters: 40)
        reason = body.text("reason", required: false, maxCharacters: OrdersController.maxNotes)
        driver = body.uuid("driverId", required: false)
        var status: OrderStatus?
        if let to {
            status = OrderStatus(rawValue: to)
            if status == nil { body.fail("to", "to: one of \(OrderStatus.allCases.map(\.rawValue).joined(separator: ", "))") }
        }
        self.status = try body.validated(status)
    }
}

/// An edit of an order's notes or drop-off (`PATCH /v1/orders/{id}`).
struct OrderChange: JSONObjectBody {
    var notes: String?
    var dropoff: Dropoff?

    init(reading body: inout JSONObject) throws {
        notes = body.text("notes", required: false, maxCharacters: OrdersController.maxNotes)
        dropoff = Dropoff.read(&body, required: false)
        try body.validate()
    }
}

extension Dropoff {
    /// The `dropoff` object of a body; its bad fields are errors of `body`.
    static func read(_ body: inout JSONObject, required: Bool) -> Dropoff? {
        guard var object = body.object("dropoff", required: required) else { return nil }
        let address = object.text("address", required: true, maxCharacters: 500, allowEmpty: false)
        let lat = object.number("lat", required: true, in: -90...90)
        let lng = object.number("lng", required: true, in: -180...180)
        body.absorb(object)
        guard let address, let lat, let lng else { return nil }
        return Dropoff(address: address, lat: lat, lng: lng)
    }
}

/// `GET /v1/orders/{id}/route`: the way left, as a polyline of `[lat, lng]` pairs.
struct RemainingRoute: Encodable, Sendable {
    var routing: String
    var points: [[Double]]
    /// Each segment's speed limit, metres per second (one fewer than the points).
    var speedsMps: [Double]
    var remainingMetres: Int
    var remainingSeconds: Int

    init(_ route: Route) {
        routing = route.kind.rawValue
        points = route.points.map { [$0.lat, $0.lng] }
        speedsMps = route.speeds
        remainingMetres = Int(route.metres.rounded())
        remainingSeconds = Int(route.seconds.rounded())
    }
}
