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

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("orders") { request, context in
            let caller = try await keys.caller(request.headers)
            var request = request
            let bytes = Array(buffer: try await request.collectBody(upTo: context.maxUploadSize))
            let key = try IdempotencyKey(request, body: bytes, what: "order")
            var body = try JSONObject(bytes)
            let placement = Self.placement(&body)
            try body.validate()
            let outcome = try await orders.place(placement!, caller: caller, key: key)
            return try IdempotencyKey.response(outcome) { order in
                try VersionTag.response(order, status: .created, version: order.version, headers: [.location: "/v1/orders/\(order.id.lowercased)"])
            }
        }
        group.get("orders") { request, _ in
            let caller = try await keys.caller(request.headers)
            return try JSONBody.response(.ok, try await orders.list(try Self.query(request, caller: caller), caller: caller))
        }
        group.get("orders/:id") { request, context in
            let caller = try await keys.caller(request.headers)
            let order = try await orders.order(try Self.id(context), caller: caller)
            return try VersionTag.response(order, version: order.version, request: request)
        }
        group.get("orders/:id/route") { request, context in
            let caller = try await keys.caller(request.headers)
            let order = try await orders.order(try Self.id(context), caller: caller)
            let pickup = try await orders.pickup(of: order)
            let route = try await positions.remainingRoute(of: order, pickup: pickup)
            return try JSONBody.response(.ok, RemainingRoute(route))
        }
        group.post("orders/:id/transitions") { request, context in
            let caller = try await keys.caller(request.headers)
            let id = try Self.id(context)
            let version = try VersionTag.expected(request)
            var request = request
            var body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let to = body.text("to", required: true, maxCharacters: 40)
            let reason = body.text("reason", required: false, maxCharacters: Self.maxNotes)
            let driver = body.uuid("driverId", required: false)
            var status: OrderStatus?
            if let to {
                status = OrderStatus(rawValue: to)
                if status == nil { body.fail("to", "to: one of \(OrderStatus.allCases.map(\.rawValue).joined(separator: ", "))") }
            }
            try body.validate()
            let order = try await orders.move(id, to: status!, reason: reason, driver: driver, expecting: version, caller: caller)
            return try VersionTag.response(order, version: order.version)
        }
        group.patch("orders/:id") { request, context in
            let caller = try await keys.caller(request.headers)
            let id = try Self.id(context)
            let version = try VersionTag.expected(request)
            var request = request
            var body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let notes = body.text("notes", required: false, maxCharacters: Self.maxNotes)
            let dropoff = Self.dropoff(&body, required: false)
            try body.validate()
            let order = try await orders.edit(id, notes: notes, dropoff: dropoff, expecting: version, caller: caller)
            return try VersionTag.response(order, version: order.version)
        }
    }

    static func id(_ context: AppRequestContext) throws -> UUID {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
            throw Problem(status: .notFound, type: "order-not-found", title: "Order not found", detail: "An order id is a UUID.")
        }
        return id
    }

    /// A placement's fields; prices and totals a client sends are ignored (the menu sets them).
    static func placement(_ body: inout JSONObject) -> OrderStore.Placement? {
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
        let dropoff = dropoff(&body, required: true)
        let notes = body.text("notes", required: false, maxCharacters: maxNotes) ?? ""
        guard let restaurant, let dropoff, body.errors.isEmpty else { return nil }
        return OrderStore.Placement(restaurantId: restaurant, items: items, dropoff: dropoff, notes: notes)
    }

    static func dropoff(_ body: inout JSONObject, required: Bool) -> Dropoff? {
        guard var object = body.object("dropoff", required: required) else { return nil }
        let address = object.text("address", required: true, maxCharacters: 500, allowEmpty: false)
        let lat = object.number("lat", required: true, in: -90...90)
        let lng = object.number("lng", required: true, in: -180...180)
        body.absorb(object)
        guard let address, let lat, let lng else { return nil }
        return Dropoff(address: address, lat: lat, lng: lng)
    }

    static func query(_ request: Request, caller: Caller) throws -> OrderStore.ListQuery {
        let parameters = request.uri.queryParameters
        let page = try PageRequest(request)
        var errors: [FieldError] = []
        var query = OrderStore.ListQuery(role: caller.isAdmin ? nil : caller.role, limit: page.limit, cursor: page.cursor)
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
        if let since = parameters.get("since"), !since.isEmpty {
            query.since = OrderStore.SyncToken(since)
            if query.since == nil { errors.append(FieldError(.parameter("since"), "since: the syncToken of an earlier answer")) }
        }
        if !errors.isEmpty { throw Problem.validation(errors) }
        return query
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
