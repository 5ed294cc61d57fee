import Foundation
import Hummingbird
import Identity
import KeySetClient
import ResourceAPI
import ServiceKit

/// `/v1/restaurants`: the list (nearest first with `near`), one restaurant, and changes by its
/// owner or an admin at the version they read.
struct RestaurantsController: Sendable {
    let restaurants: RestaurantStore
    let keys: KeySetCache

    static let notFound = Problem(
        status: .notFound,
        type: "restaurant-not-found",
        title: "Restaurant not found",
        detail: "A restaurant id is a UUID."
    )

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("restaurants", use: list)
            .post("restaurants", use: create)
            .get("restaurants/:id", use: show)
            .patch("restaurants/:id", use: update)
            .put("restaurants/:id/menu", use: replaceMenu)
    }

    /// The list a phone keeps offline: every answer with a `syncToken`; with `since` (a sync is
    /// of the whole list: no `near`, `cuisine` or `open`), the restaurants changed after it.
    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let parameters = request.uri.queryParameters
        if parameters.get("since") != nil {
            if ["near", "radius", "cuisine", "open"].contains(where: { parameters.get($0) != nil }) {
                throw Problem.validation([FieldError(.parameter("since"), "since: a sync is of the whole list, without near, cuisine or open")])
            }
            let sync = try SyncRequest(request, list: "restaurants", owner: "*")
            return try JSONBody.tagged(try await restaurants.changes(sync, caller: caller), for: request)
        }
        // A first listing's page: its cursor carries the first page's token.
        var pinned: SyncToken?
        if let cursor = parameters.get("cursor"), let tilde = cursor.firstIndex(of: "~") {
            pinned = SyncToken(String(cursor[cursor.index(after: tilde)...]))
            guard pinned?.list == "restaurants" else {
                throw Problem.validation([FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of a previous page")])
            }
        }
        let (items, next, token) = try await restaurants.list(try Self.query(request), pinned: pinned, caller: caller)
        let page = SyncPage(items: items, deleted: [], nextCursor: next.map { "\($0.description)~\(token.description)" }, syncToken: token)
        return try JSONBody.tagged(page, for: request)
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        try caller.require(.admin, to: "create restaurants")
        var request = request
        let new = try await request.decodeBody(as: NewRestaurant.self, context: context)
        let created = try await restaurants.create(new.fields, caller: caller)
        return try VersionTag.response(
            created,
            status: .created,
            version: created.version,
            headers: [.location: "/v1/restaurants/\(created.id.lowercased)"]
        )
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let restaurant = try await restaurants.restaurant(try context.parameters.uuid("id", orThrow: Self.notFound), caller: caller)
        return try VersionTag.response(restaurant, version: restaurant.version, request: request)
    }

    @Sendable func update(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let id = try context.parameters.uuid("id", orThrow: Self.notFound)
        let version = try VersionTag.expected(request)
        var request = request
        let change = try await request.decodeBody(as: RestaurantChange.self, context: context)
        let updated = try await restaurants.update(id, change.fields, expecting: version, caller: caller)
        return try VersionTag.response(updated, version: updated.version)
    }

    @Sendable func replaceMenu(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let id = try context.parameters.uuid("id", orThrow: Self.notFound)
        let version = try VersionTag.expected(request)
        var request = request
        let menu = try Self.menu(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
        let updated = try await restaurants.update(id, RestaurantStore.Fields(menu: menu), expecting: version, caller: caller)
        return try VersionTag.response(updated, version: updated.version)
    }

    static func query(_ request: Request) throws -> RestaurantStore.Query {
        let parameters = request.uri.queryParameters
        var errors: [FieldError] = []
        // The cursor is of this list's own kind (a distance or a time, and an id): read below.
        var query = RestaurantStore.Query(limit: try PageRequest.limit(request))
        if let near = parameters.get("near") {
            let parts = near.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            if parts.count == 2, let lat = parts[0], let lng = parts[1], lat.isFinite, lng.isFinite, (-90...90).contains(lat),
                (-180...180).contains(lng)
            {
                query.near = .init(lat: lat, lng: lng)
            } else {
                errors.append(FieldError(.parameter("near"), "near: lat,lng in degrees (60.17,24.94)"))
            }
        }
        if let radius = parameters.get("radius") {
            if let metres = Double(radius), metres.isFinite, metres > 0, metres <= 50_000, query.near != nil {
                query.radiusMetres = metres
            } else {
                errors.append(FieldError(.parameter("radius"), "radius: metres from 1 to 50000, with near"))
            }
        }
        if let cuisine = parameters.get("cuisine"), !cuisine.isEmpty { query.cuisine = String(cuisine.prefix(100)) }
        if let open = parameters.get("open") {
            switch open {
            case "true": query.open = true
            case "false": query.open = false
            default: errors.append(FieldError(.parameter("open"), "open: true or false"))
            }
        }
        if let cursor = parameters.get("cursor"), !cursor.isEmpty {
            // The position; after `~`, the first page's token (read by `list`).
            query.cursor = RestaurantStore.ListCursor(String(cursor.prefix { $0 != "~" }))
            if query.cursor == nil { errors.append(FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of a previous page")) }
        }
        if !errors.isEmpty { throw Problem.validation(errors) }
        return query
    }

    /// The fields of a create or a `PATCH`; each bad field is an error of `body`.
    static func fields(_ body: inout JSONObject, creating: Bool) -> RestaurantStore.Fields {
        var fields = RestaurantStore.Fields()
        fields.name = body.text("name", required: creating, maxCharacters: 200, allowEmpty: false)
        if body.fields["cuisine"] != nil { fields.cuisine = .some(body.text("cuisine", required: false, maxCharacters: 100)) }
        fields.address = body.text("address", required: false, maxCharacters: 500)
        if var location = body.object("location", required: creating) {
            let lat = location.number("lat", required: true, in: -90...90)
            let lng = location.number("lng", required: true, in: -180...180)
            if let lat, let lng { fields.location = .init(lat: lat, lng: lng) }
            body.absorb(location)
        }
        if body.fields["imageUrl"] != nil { fields.imageUrl = .some(body.text("imageUrl", required: false, maxCharacters: 2_000)) }
        if let hours = body.fields["openingHours"] {
            switch hours {
            case .null: fields.openingHours = .some(nil)
            case .object(let days):
                var parsed: [String: String] = [:]
                for (day, value) in days {
                    // Days mon…sun, each ranges of Helsinki time ("10-22", "11:30-14:00,17-23").
                    if case .string(let text) = value, OpeningHours.days.contains(day), text.count <= 100, OpeningHours.ranges(text) != nil {
                        parsed[day] = text
                    } else {
                        body.fail(
                            "openingHours/\(day.prefix(20))",
                            "openingHours: mon…sun, each ranges of Helsinki time such as \"10-22\" or \"11:30-14:00,17-23\"; null is always open"
                        )
                    }
                }
                fields.openingHours = .some(parsed)
            default: body.fail("openingHours", "openingHours: an object of short texts by day, or null for always open")
            }
        }
        fields.isOpen = body.bool("isOpen", required: false)
        if body.fields["menu"] != nil, creating {
            if case .array(let items)? = body.fields["menu"] {
                fields.menu = menuItems(items, at: "/menu", body: &body)
            } else {
                body.fail("menu", "menu: an array of {id, name, priceCents, available}")
            }
        }
        return fields
    }

    /// A `PUT …/menu` body: the whole menu, as an array.
    static func menu(_ bytes: [UInt8]) throws -> [MenuItem] {
        guard case .array(let items)? = try JSONObject.parse(bytes) else {
            throw Problem(
                status: .badRequest,
                type: "malformed-body",
                title: "Malformed request body",
                detail: "the body is not a JSON array of menu items"
            )
        }
        var body = try JSONObject(Array("{}".utf8))
        let menu = menuItems(items, at: "", body: &body)
        try body.validate()
        return menu
    }

    /// The menu items of an array at `pointer`; each bad field is an error of `body`.
    private static func menuItems(_ items: [JSONValue], at pointer: String, body: inout JSONObject) -> [MenuItem] {
        var list = JSONObject(fields: [:], at: pointer)
        defer { body.absorb(list) }
        guard items.count <= 200 else {
            list.fail("", "a menu has at most 200 items")
            return []
        }
        var menu: [MenuItem] = []
        var seen = Set<String>()
        for (index, value) in items.enumerated() {
            guard case .object(let fields) = value else {
                list.fail("\(index)", "each menu item is an object")
                continue
            }
            var item = JSONObject(fields: fields, at: "\(pointer)/\(index)")
            let id = item.text("id", required: true, maxCharacters: 40, allowEmpty: false)
            let name = item.text("name", required: true, maxCharacters: 200, allowEmpty: false)
            let price = item.integer("priceCents", required: true, in: 0...10_000_000)
            let available = item.bool("available", required: false) ?? true
            if let id, !seen.insert(id).inserted { item.fail("id", "menu item ids are unique; \(id) repeats") }
            list.absorb(item)
            if let id, let name, let price { menu.append(MenuItem(id: id, name: name, priceCents: price, available: available)) }
        }
        return menu
    }
}

/// A page of restaurants.
/// A new restaurant, with its owner (`POST /v1/restaurants`, by an admin).
struct NewRestaurant: JSONObjectBody {
    var fields: RestaurantStore.Fields

    init(reading body: inout JSONObject) throws {
        fields = RestaurantsController.fields(&body, creating: true)
        fields.ownerId = body.uuid("ownerId", required: true)
        try body.validate()
    }
}

/// A change of a restaurant's fields, from `PATCH /v1/restaurants/{id}` or a `/rest/v1` row.
struct RestaurantChange: JSONObjectBody {
    var fields: RestaurantStore.Fields

    init(reading body: inout JSONObject) throws {
        fields = RestaurantsController.fields(&body, creating: false)
        try body.validate()
    }
}
