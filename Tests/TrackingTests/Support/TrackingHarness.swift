import AsyncHTTPClient
import Contracts
import Database
import EventBus
import Foundation
import HTTPTypes
import Identity
import LocalStack
import Logging
import NIOCore
import PostgresNIO
import RoadNetwork
import ServiceKit
import TestSupport

@testable import Tracking

/// tracking for one test: its own database (as the role owning only `tracking`), the test Kafka
/// cluster, a key server for test tokens (the fake photo-catalog publishes one), and the
/// application on a free port. No seeding: tests make the restaurants they need as an admin.
struct TrackingHarness: Sendable {
    let app: RunningApplication
    let keys: FakePhotoCatalog
    let database: TestDatabase
    /// The service role's URL, for another replica.
    let databaseURL: String
    /// The configuration the application runs with, for starting another replica as a process.
    let environment: [String: String]

    static let issuer = ServiceHarness.issuer
    let admin = UUID()

    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        _ body: @Sendable (TrackingHarness) async throws -> Result
    ) async throws -> Result {
        let keys = FakePhotoCatalog(images: [:])
        try await keys.start()
        do {
            let result = try await run(overrides, keys: keys, body)
            await keys.stop()
            return result
        } catch {
            await keys.stop()
            throw error
        }
    }

    /// tracking as tests run it: the standard environment, without seeding.
    static func prepare(keys: FakePhotoCatalog, overrides: [String: String] = [:]) async throws -> ServiceHarness {
        try await ServiceHarness.prepare(
            .init(schema: "tracking", databasePoolSize: 4, keys: ("TRACKING", keys.baseURL + "/jwks.json")),
            settings: ["TRACKING_SEED": "false"],
            overrides: overrides
        )
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        keys: FakePhotoCatalog,
        _ body: @Sendable (TrackingHarness) async throws -> Result
    ) async throws -> Result {
        let service = try await prepare(keys: keys, overrides: overrides)
        return try await service.run("tracking", TrackingConfiguration.self, logger: ServiceHarness.quietLogger("tracking"), build: buildApplication)
        {
            app in
            try await body(
                TrackingHarness(
                    app: app,
                    keys: keys,
                    database: service.database!,
                    databaseURL: service.databaseURL!,
                    environment: service.environment
                )
            )
        }
    }

    // MARK: Calls

    /// Someone signed in with a role.
    struct Person: Sendable {
        var id = UUID()
        var role: UserRole
    }

    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        as person: Person?,
        headers: [(String, String)] = [],
        json: String? = nil
    ) async throws -> TestResponse {
        var all = headers
        if let person {
            all.append(("Authorization", "Bearer \(try token(for: person))"))
        }
        if json != nil { all.append(("Content-Type", "application/json")) }
        return try await app.request(method, path, headers: all, body: json.map { .bytes(ByteBuffer(string: $0)) })
    }

    /// `person`'s access token, signed as auth would.
    func token(for person: Person) throws -> String {
        try testAccessToken(user: person.id, role: person.role.rawValue, key: keys.key, issuer: Self.issuer)
    }

    var adminPerson: Person { Person(id: admin, role: .admin) }

    /// A restaurant owned by `owner`, made by an admin, with a menu of three items (the third
    /// unavailable) at Helsinki's railway square unless told otherwise.
    func restaurant(owner: Person, lat: Double = 60.1710, lng: Double = 24.9414, isOpen: Bool = true) async throws -> [String: Any] {
        let response = try await call(
            .post,
            "/v1/restaurants",
            as: adminPerson,
            json: """
                {"ownerId":"\(owner.id.lowercased)","name":"Kitchen \(UUID().uuidString.prefix(4))","cuisine":"pizza","address":"Kaivokatu 1",
                 "location":{"lat":\(lat),"lng":\(lng)},"isOpen":\(isOpen),
                 "menu":[{"id":"m1","name":"Margherita","priceCents":1290,"available":true},
                         {"id":"m2","name":"Tiramisu","priceCents":650,"available":true},
                         {"id":"m3","name":"Calzone","priceCents":1490,"available":false}]}
                """
        )
        guard response.status == 201 else { throw HarnessFailure(description: "restaurant: \(response.status) \(response.text)") }
        return try response.json()
    }

    /// Places an order at `restaurant` as `customer`.
    func place(
        at restaurant: String,
        as customer: Person,
        key: String = UUID().uuidString,
        items: String = #"[{"menuItemId":"m1","quantity":2},{"menuItemId":"m2","quantity":1}]"#
    ) async throws -> TestResponse {
        try await call(
            .post,
            "/v1/orders",
            as: customer,
            headers: [("Idempotency-Key", key)],
            json: """
                {"restaurantId":"\(restaurant)","items":\(items),"dropoff":{"address":"Mannerheimintie 22","lat":60.1727,"lng":24.9335},"notes":"Door code 1234"}
                """
        )
    }

    /// One move at `version` (the order's ETag).
    func move(_ order: String, to status: String, as person: Person, version: String?, extra: String = "") async throws -> TestResponse {
        try await call(
            .post,
            "/v1/orders/\(order)/transitions",
            as: person,
            headers: version.map { [("If-Match", $0)] } ?? [],
            json: #"{"to":"\#(status)"\#(extra)}"#
        )
    }

    /// The moves of a whole delivery after `placed`, and who makes each: the restaurant's owner up
    /// to ready, an admin assigning `driver`, then the driver.
    static func deliveryMoves(owner: Person, admin: Person, driver: Person) -> [(status: String, by: Person, extra: String)] {
        [
            ("accepted", owner, ""), ("preparing", owner, ""), ("ready_for_pickup", owner, ""),
            ("driver_assigned", admin, #","driverId":"\#(driver.id.lowercased)""#),
        ]
            + ["enroute_to_pickup", "arrived_at_pickup", "picked_up", "enroute_to_dropoff", "arrived_at_dropoff", "delivered"].map {
                ($0, driver, "")
            }
    }

    /// Moves `order` (at version 1, just placed) through a whole delivery, each move at the version
    /// the one before returned; `beforeEach` runs before each move. The responses, in order.
    func deliver(
        _ order: String,
        owner: Person,
        driver: Person,
        beforeEach: (String) async throws -> Void = { _ in }
    ) async throws -> [(status: String, by: Person, response: TestResponse)] {
        var version = 1
        var responses: [(status: String, by: Person, response: TestResponse)] = []
        for (status, person, extra) in Self.deliveryMoves(owner: owner, admin: adminPerson, driver: driver) {
            try await beforeEach(status)
            let response = try await move(order, to: status, as: person, version: "\"\(version)\"", extra: extra)
            responses.append((status, person, response))
            guard response.status == 200 else { break }
            version += 1
        }
        return responses
    }

    /// The fixture's 350 places, inserted as tracking's seeder inserts them (without their owners'
    /// accounts: no auth runs here), by `seeders` seeders at once as replicas would.
    func insertFixturePlaces(seeders: Int = 1) async throws {
        let graph = try RoadGraph.helsinki()
        let client = PostgresClient(configuration: try PostgresURL.parse(databaseURL))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await withThrowingTaskGroup(of: Void.self) { inserts in
                for _ in 0..<seeders {
                    inserts.addTask {
                        do {
                            try await RestaurantSeeder(
                                client: client,
                                outbox: try Outbox(schema: "tracking", service: "tracking"),
                                http: .shared,
                                authURL: URL(string: "http://auth.invalid")!,
                                serviceToken: "unused",
                                logger: Logger(label: "seeder")
                            ).insertPlaces(graph)
                        } catch {
                            throw HarnessFailure(description: "a seeder failed: \(error.logDescription)")
                        }
                    }
                }
                try await inserts.waitForAll()
            }
        }
    }

    /// tracking's events about `order`, in order, once the outbox has published them.
    func published(about order: String) async throws -> [EventEnvelope] {
        try await database.waitUntilOutboxIsPublished(schema: "tracking")
        return try await TestKafka.shared.events(on: TopicCatalog.trackingOrders.name, key: order)
    }

    /// One position of `driver`, recorded now.
    func position(of driver: Person, lat: Double, lng: Double) async throws {
        let response = try await call(
            .post,
            "/v1/drivers/me/positions",
            as: driver,
            json: #"[{"lat":\#(lat),"lng":\#(lng),"recordedAt":"\#(EventJSON.formatTimestamp(Date()))"}]"#
        )
        guard response.status == 200, (try response.json()["accepted"] as? Int) == 1 else {
            throw HarnessFailure(description: "position: \(response.status) \(response.text)")
        }
    }

    struct HarnessFailure: Error, CustomStringConvertible {
        var description: String
    }
}
