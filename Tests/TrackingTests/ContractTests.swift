import Contracts
import Foundation
import HTTPTypes
import TestSupport
import Testing
import Yams

@testable import Tracking

/// tracking's answers against `Services/Tracking/openapi.yaml`.
/// `make contract SERVICE=tracking` runs this suite alone.
@Suite("tracking contract")
struct ContractTests {
    static let contract = try! OpenAPIDocument(service: "Tracking")

    static func document() throws -> [String: Any] { try contract.load() }

    static func required(_ name: String) throws -> Set<String> { try contract.required(name) }

    /// schemathesis drives each part of the API as the role it is for: restaurants as an admin,
    /// orders as a customer (with a restaurant to order from), a driver's shift and positions as a
    /// driver.
    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await TrackingHarness.with { tracking in
            let customer = TrackingHarness.Person(role: .customer)
            // The fixture's places, as a seeded stack has them: the document's example order is
            // placed at one of them.
            try await tracking.insertFixturePlaces()
            let runs: [(TrackingHarness.Person, String, stateful: Bool)] = [
                (tracking.adminPerson, "^/v1/restaurants", true), (customer, "^/v1/orders", true),
                (TrackingHarness.Person(role: .driver), "^/v1/drivers/", false),
            ]
            for (person, paths, stateful) in runs {
                let report = try await Schemathesis(
                    service: "Tracking",
                    baseURL: tracking.app.baseURL,
                    headers: [("Authorization", "Bearer \(try tracking.token(for: person))")],
                    includePaths: [paths],
                    stateful: stateful
                ).run()
                #expect(report.passed, "\(person.role) on \(paths): \(report)")
            }
        }
    }

    /// The document's example order (which schemathesis's examples phase sends first) is placed
    /// as written on a seeded stack: its restaurant is the fixture's first place.
    @Test func theDocumentsExampleOrderIsPlacedAtASeededPlace() async throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        let body = try #require(
            (((paths["/v1/orders"]?["post"] as? [String: Any])?["requestBody"] as? [String: Any])?["content"] as? [String: Any])?["application/json"]
                as? [String: Any]
        )
        let example = try #require(body["example"] as? [String: Any])
        #expect(example["restaurantId"] as? String == RestaurantSeeder.restaurantID(56_418_307).lowercased)
        let json = String(decoding: try JSONSerialization.data(withJSONObject: example), as: UTF8.self)
        try await TrackingHarness.with { tracking in
            try await tracking.insertFixturePlaces()
            let placed = try await tracking.call(
                .post,
                "/v1/orders",
                as: TrackingHarness.Person(role: .customer),
                headers: [("Idempotency-Key", "example")],
                json: json
            )
            #expect(placed.status == 201, "\(placed.text)")
        }
    }

    @Test func everyDocumentedOperationIsServedAndErrorsAreProblems() async throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        #expect(paths.count == 9)
        let operations = try Self.contract.operations()
        #expect(operations.count == 13)
        try await TrackingHarness.with { tracking in
            let someone = TrackingHarness.Person(role: .customer)
            for (path, method) in operations {
                let concrete = path.replacingOccurrences(of: "{id}", with: UUID().uuidString)
                let response = try await tracking.call(
                    HTTPRequest.Method(method.uppercased())!,
                    concrete,
                    as: someone,
                    headers: [("Idempotency-Key", "contract"), ("If-Match", "\"1\"")],
                    json: "{}"
                )
                #expect(response.status != 200 || method == "get", "\(method) \(path) took an empty body from a customer")
                #expect(response.status != 405 && response.status < 500, "\(method) \(path): \(response.status) \(response.text)")
                if response.status >= 400 {
                    #expect(response.headers["content-type"] == "application/problem+json", "\(method) \(path)")
                }
                let anonymous = try await tracking.call(HTTPRequest.Method(method.uppercased())!, concrete, as: nil, json: "{}")
                #expect(anonymous.status == 401, "\(method) \(path) without a token: \(anonymous.status)")
            }
        }
    }

    @Test func restaurantsAndOrdersCarryWhatTheDocumentRequires() async throws {
        try await TrackingHarness.with { tracking in
            let owner = TrackingHarness.Person(role: .restaurant)
            let customer = TrackingHarness.Person(role: .customer)
            let restaurant = try await tracking.restaurant(owner: owner)
            #expect(Set(restaurant.keys).isSuperset(of: try Self.required("Restaurant")))
            let id = try #require(restaurant["id"] as? String)
            let order = try await tracking.place(at: id, as: customer).json()
            #expect(Set(order.keys).isSuperset(of: try Self.required("Order")))
            let listing = try await tracking.call(.get, "/v1/orders", as: customer).json()
            #expect(Set(listing.keys) == (try Self.required("OrderListing")))
            let page = try await tracking.call(.get, "/v1/restaurants?near=60.17,24.94", as: customer).json()
            #expect(Set(page.keys) == (try Self.required("RestaurantPage")))
        }
    }

    /// Every type tracking publishes, produced through its API — a whole delivery with a position
    /// sent on the way, a cancelled order, and the customer's account deleted — and checked
    /// against its JSON Schema.
    @Test func everyEventItPublishesMatchesItsSchema() async throws {
        try await TrackingHarness.with { tracking in
            let owner = TrackingHarness.Person(role: .restaurant)
            let customer = TrackingHarness.Person(role: .customer)
            let driver = TrackingHarness.Person(role: .driver)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let delivered = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            let moves = try await tracking.deliver(delivered, owner: owner, driver: driver) { next in
                // On the way to the customer: the position carries the order and its ETA.
                if next == "arrived_at_dropoff" { try await tracking.position(of: driver, lat: 60.1720, lng: 24.9370) }
            }
            #expect(moves.allSatisfy { $0.response.status == 200 }, "\(moves.map { "\($0.status): \($0.response.status)" })")
            let cancelled = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            #expect(try await tracking.move(cancelled, to: "cancelled", as: customer, version: "\"1\"").status == 200)
            // The customer deletes their account: tracking erases them and acknowledges it.
            try await TestKafka.shared.publish([UserDeleted(userId: customer.id, deletedAt: Date())], source: "/splash/auth")
            let erased = try await tracking.database.awaitErasureAcknowledgements(TrackingUserErased.self, of: customer.id, schema: "tracking")

            let events =
                try await tracking.published(about: delivered) + (try await tracking.published(about: cancelled))
                + (try await TestKafka.shared.events(on: TopicCatalog.trackingLocations.name, key: driver.id.lowercased))
                + (try await TestKafka.shared.events(on: TopicCatalog.trackingRestaurants.name, key: restaurant)) + erased
            // Every type on tracking's topics but location-updated.v1, superseded before it was
            // published.
            let published = Set(
                EventCatalog.all.filter { $0.topic.name.hasPrefix("tracking.") && $0 != DriverLocationUpdatedV1.self }.map { $0.type }
            )
            #expect(Set(events.map(\.type)) == published)
            let located = try #require(events.first { $0.type == DriverLocationUpdated.type }).decode(DriverLocationUpdated.self)
            #expect(located.orderId?.lowercased == delivered && located.etaSeconds != nil)
            let report = try await EventSchemaCheck.validate(events)
            #expect(report.contains("validated \(events.count) payload(s), 0 failure(s)"), "\(report)")
        }
    }
}
