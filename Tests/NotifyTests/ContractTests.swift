import Contracts
import Foundation
import ServiceKit
import TestSupport
import Testing

@testable import Notify

/// notify's answers against `Services/Notify/openapi.yaml`. `make contract SERVICE=notify` runs
/// this suite alone.
@Suite("notify contract")
struct ContractTests {
    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let report = try await Schemathesis(
                service: "Notify",
                baseURL: notify.app.baseURL,
                headers: [("Authorization", "Bearer \(try notify.token(for: UUID()))")]
            ).run()
            #expect(report.passed, "\(report)")
        }
    }
}

extension ContractTests {
    /// Every type notify consumes, replayed from its schema's example (with fresh ids) into a
    /// running notify, has its effect: its projections, and the deliveries the examples' people
    /// are owed.
    @Test func everyEventItConsumesHasItsEffectFromItsSchemasExample() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            var examples = EventExamples()
            let restaurant = try examples.example(RestaurantChanged.self)
            let placed = try examples.example(OrderPlaced.self)
            let assigned = try examples.example(DriverAssigned.self)
            let moved = try examples.example(OrderStatusChanged.self)
            let arriving = try examples.example(OrderArriving.self)
            let registered = try examples.example(UserRegistered.self)
            let renamed = try examples.example(ProfileUpdated.self)
            let posted = try examples.example(PostCreated.self)
            let completed = try examples.example(EditCompleted.self)
            let failed = try examples.example(EditFailed.self)
            let customer = placed.parties.customerId
            let driver = try #require(assigned.parties.driverId)
            #expect(completed.userId == customer && registered.userId == customer, "the examples name one person")
            try await notify.registerDevice(for: customer)
            try await notify.registerDevice(for: driver)
            try await TestKafka.shared.publish([restaurant, placed, assigned, moved, arriving], source: "/splash/tracking")
            try await TestKafka.shared.publish([registered, renamed], source: "/splash/auth")
            try await TestKafka.shared.publish([posted, try examples.example(PhotoLiked.self)], source: "/splash/social")
            try await TestKafka.shared.publish([completed, failed], source: "/splash/edit-render")

            let database = notify.database
            // Four topics into a consumer group that has just joined: generous under make test's load.
            let projections: @Sendable () async throws -> [String: Int] = {
                [
                    // By id: other suites replay the same examples (fresh ids, the same names).
                    "restaurants": try await database.count(
                        "notify.restaurants",
                        where: "restaurant_id = '\(restaurant.restaurantId.lowercased)' AND name = '\(restaurant.name)'"
                    ),
                    "orders": try await database.count("notify.orders", where: "order_id = '\(placed.orderId.lowercased)' AND item_count = 12"),
                    "people": try await database.count(
                        "notify.people",
                        where: "user_id = '\(renamed.userId.lowercased)' AND username = '\(renamed.username ?? "")'"
                    ),
                    "posts": try await database.count("notify.posts", where: "post_id = '\(posted.postId.lowercased)'"),
                ]
            }
            do {
                try await eventually("the projections", timeout: .seconds(240)) { try await projections().values.reduce(0, +) == 4 }
            } catch {
                let handled = try await database.count("notify.inbox")
                Issue.record("projections \(try await projections()), \(handled) events handled")
                throw error
            }
            // The customer: a driver on the way, arriving (not the kitchen's step in between), the
            // edit ready and failed; the driver: the offer, with the order's items.
            try await eventually("the deliveries, sent", timeout: .seconds(240)) {
                let log = try await notify.deliveries()
                return log.count == 5 && log.allSatisfy { $0.status == "delivered" }
            }
            let log = try await notify.deliveries()
            #expect(log.filter { $0.kind == "order" }.count == 2)
            #expect(log.filter { $0.kind == "edit" }.count == 2)
            #expect(log.filter { $0.kind == "offer" }.count == 1)
            let admin = try await notify.call(.get, "/v1/admin/notifications", as: UUID(), role: "admin").json()
            let offer = try #require((admin["items"] as? [[String: Any]])?.first { $0["kind"] as? String == "offer" })
            let alert = ((offer["payload"] as? [String: Any])?["aps"] as? [String: Any])?["alert"] as? [String: Any]
            #expect((alert?["body"] as? String)?.hasPrefix("New delivery: 12 items from ") == true, "\(offer)")
        }
    }
}
