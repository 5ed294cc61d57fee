import Contracts
import EventBus
import Foundation
import LocalStack
import ServiceKit
import TestSupport
import Testing

/// A deleted user (`auth.user.deleted.v1`) is erased from tracking: a customer's orders stay in the
/// restaurant's books without them (an order under way cancelled), a driver's order goes back to
/// the kitchen's counter, finished orders forget them, their position goes, no history names
/// them, and the erasure is acknowledged on `tracking.erasures` with what changed.
@Suite("Erasing a deleted user from tracking")
struct TrackingErasureTests {
    typealias Person = TrackingHarness.Person

    @Test func customersAndDriversAreErasedAndTheRestaurantKeepsItsBooks() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let (ana, ben) = (Person(role: .customer), Person(role: .customer))
            let (dan, eve) = (Person(role: .driver), Person(role: .driver))
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            func place(_ customer: Person) async throws -> String {
                let placed = try await tracking.place(at: restaurant, as: customer)
                #expect(placed.status == 201, "\(placed.text)")
                return try #require(try placed.json()["id"] as? String)
            }
            // Ana: one order delivered by Eve, one accepted and cooking. Ben: one delivered by Dan,
            // one Dan is driving to the restaurant for.
            let anasDelivered = try await place(ana)
            #expect(try await tracking.deliver(anasDelivered, owner: owner, driver: eve).allSatisfy { $0.response.status == 200 })
            let anasCooking = try await place(ana)
            #expect(try await tracking.move(anasCooking, to: "accepted", as: owner, version: "\"1\"").status == 200)
            let bensDelivered = try await place(ben)
            #expect(try await tracking.deliver(bensDelivered, owner: owner, driver: dan).allSatisfy { $0.response.status == 200 })
            let bensOnTheWay = try await place(ben)
            let moves = TrackingHarness.deliveryMoves(owner: owner, admin: tracking.adminPerson, driver: dan).prefix(5)
            for (version, move) in moves.enumerated() {
                let moved = try await tracking.move(bensOnTheWay, to: move.status, as: move.by, version: "\"\(version + 1)\"", extra: move.extra)
                #expect(moved.status == 200, "\(move.status): \(moved.text)")
            }
            #expect(try await tracking.call(.post, "/v1/drivers/me/shift", as: dan, json: #"{"onShift":true}"#).status == 200)
            try await tracking.position(of: dan, lat: 60.1700, lng: 24.9400)
            try await waitUntilReady("dan's position written", timeout: .seconds(10)) {
                (try? await tracking.database.count("tracking.drivers", where: "user_id = '\(dan.id.lowercased)' AND lat IS NOT NULL")) == 1
            }

            for person in [ana, dan] {
                try await TestKafka.shared.publish([UserDeleted(userId: person.id, deletedAt: Date())], source: "/splash/auth")
            }
            var counts: [UUID: [String: Int]] = [:]
            for person in [ana, dan] {
                let acknowledged = try await tracking.database.awaitErasureAcknowledgements(
                    TrackingUserErased.self,
                    of: person.id,
                    schema: "tracking"
                )
                #expect(acknowledged.count == 1)
                counts[person.id] = try EventJSON.decoder.decode(TrackingUserErased.self, from: Data(try #require(acknowledged.first).data)).counts
                let report = try await EventSchemaCheck.validate(acknowledged)
                #expect(report.contains("validated 1 payload(s), 0 failure(s)"), "\(report)")
            }
            #expect(counts[ana.id] == ["orders": 2, "cancelled": 1, "released": 0, "deliveries": 0, "positions": 0, "tombstones": 0])
            #expect(counts[dan.id] == ["orders": 0, "cancelled": 0, "released": 1, "deliveries": 1, "positions": 1, "tombstones": 1])

            // Nothing in tracking names Ana or Dan any more: no column, no history entry.
            for person in [ana, dan] {
                let id = person.id.lowercased
                #expect(try await tracking.database.count("tracking.orders", where: "lower(orders::text) LIKE '%\(id)%'") == 0)
                #expect(try await tracking.database.count("tracking.drivers", where: "user_id = '\(id)'") == 0)
                #expect(try await tracking.database.count("tracking.order_tombstones", where: "user_id = '\(id)'") == 0)
            }
            // The restaurant keeps Ana's orders' lines and totals; the one cooking is cancelled.
            let books = try await tracking.call(.get, "/v1/orders/\(anasDelivered)", as: owner)
            #expect(books.status == 200, "\(books.text)")
            let kept = try books.json()
            #expect(kept["customerId"] == nil && kept["dropoff"] == nil && kept["notes"] as? String == "")
            #expect(kept["totalCents"] as? Int == 2 * 1290 + 650 && (kept["items"] as? [Any])?.count == 2)
            #expect(kept["status"] as? String == "delivered")
            #expect(try await tracking.call(.get, "/v1/orders/\(anasDelivered)/route", as: owner).status == 404)
            let cancelled = try await tracking.call(.get, "/v1/orders/\(anasCooking)", as: owner).json()
            #expect(cancelled["status"] as? String == "cancelled")
            #expect(((cancelled["statusHistory"] as? [[String: Any]])?.last?["reason"] as? String)?.contains("account was deleted") == true)
            // Ben's order Dan was driving to is back on the counter with no driver; his delivered
            // one forgets Dan; Ben still sees both, with his dropoff.
            let back = try await tracking.call(.get, "/v1/orders/\(bensOnTheWay)", as: ben).json()
            #expect(back["status"] as? String == "ready_for_pickup" && back["driverId"] == nil)
            let delivered = try await tracking.call(.get, "/v1/orders/\(bensDelivered)", as: ben).json()
            #expect(delivered["status"] as? String == "delivered" && delivered["driverId"] == nil)
            #expect((delivered["dropoff"] as? [String: Any])?["address"] as? String == "Mannerheimintie 22")
            // The erased people's still-valid tokens are refused; a late position is not written back.
            try await waitUntilReady("dan's token refused", timeout: .seconds(10)) {
                (try? await tracking.call(.get, "/v1/orders", as: dan))?.status == 401
            }
            #expect(try await tracking.call(.get, "/v1/orders", as: ana).status == 401)
            try await Task.sleep(for: .seconds(2))
            #expect(try await tracking.database.count("tracking.drivers", where: "user_id = '\(dan.id.lowercased)'") == 0)
        }
    }
}
