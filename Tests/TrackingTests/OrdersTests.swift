import Contracts
import Foundation
import TestSupport
import Testing

@testable import Tracking

@Suite("Orders") struct OrdersTests {
    typealias Person = TrackingHarness.Person

    @Test func anOrderIsPricedFromTheMenuPlacedOncePerKeyAndRefusedWhereItCannotBeServed() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            // Prices and totals sent by the client are ignored.
            let key = UUID().uuidString
            let placed = try await tracking.place(
                at: restaurant,
                as: customer,
                key: key,
                items: #"[{"menuItemId":"m1","quantity":2,"unitPriceCents":1},{"menuItemId":"m2","quantity":1}]"#
            )
            #expect(placed.status == 201, "\(placed.text)")
            #expect(placed.headers["etag"] == "\"1\"")
            let order = try placed.json()
            #expect(order["totalCents"] as? Int == 2 * 1290 + 650)
            #expect(order["status"] as? String == "placed")
            #expect(order["routing"] as? String == "road")
            #expect((order["etaSeconds"] as? Int ?? 0) > 0)
            #expect(order["restaurantOwnerId"] as? String == owner.id.lowercased)
            let items = try #require(order["items"] as? [[String: Any]])
            #expect(items.map { $0["unitPriceCents"] as? Int } == [1290, 650])
            #expect((order["statusHistory"] as? [[String: Any]])?.count == 1)
            // The same key and body: the same order; the same key with another body: refused.
            let again = try await tracking.place(
                at: restaurant,
                as: customer,
                key: key,
                items: #"[{"menuItemId":"m1","quantity":2,"unitPriceCents":1},{"menuItemId":"m2","quantity":1}]"#
            )
            #expect(again.status == 201)
            #expect(again.headers["idempotent-replayed"] == "true")
            #expect(try again.json()["id"] as? String == order["id"] as? String)
            #expect(try await tracking.place(at: restaurant, as: customer, key: key).status == 422)
            #expect(try await tracking.call(.post, "/v1/orders", as: customer, json: "{}").status == 422)  // no Idempotency-Key

            // An unavailable item, an unknown one, a closed restaurant, a role that does not order.
            let unavailable = try await tracking.place(at: restaurant, as: customer, items: #"[{"menuItemId":"m3","quantity":1}]"#)
            #expect(unavailable.status == 409)
            #expect(try unavailable.json()["type"] as? String == "urn:splash:problem:item-unavailable")
            let unknown = try await tracking.place(at: restaurant, as: customer, items: #"[{"menuItemId":"nope","quantity":1}]"#)
            #expect(unknown.status == 422)
            #expect(unknown.text.contains("/items/0/menuItemId"))
            let closed = try #require(try await tracking.restaurant(owner: owner, isOpen: false)["id"] as? String)
            let refused = try await tracking.place(at: closed, as: customer)
            #expect(refused.status == 409)
            #expect(try refused.json()["type"] as? String == "urn:splash:problem:restaurant-closed")
            for role in [UserRole.restaurant, .driver] {
                let response = try await tracking.place(at: restaurant, as: Person(role: role))
                #expect(response.status == 403)
                #expect(try response.json()["type"] as? String == "urn:splash:problem:forbidden-role")
            }
            for bad in [#"{"restaurantId":"x","items":[],"dropoff":{"address":"","lat":91,"lng":"e"}}"#, "[1]", "not json"] {
                let response = try await tracking.call(
                    .post,
                    "/v1/orders",
                    as: customer,
                    headers: [("Idempotency-Key", UUID().uuidString)],
                    json: bad
                )
                #expect([400, 422].contains(response.status), "\(bad): \(response.status)")
            }
            #expect(try await tracking.database.count("tracking.orders") == 1)
        }
    }

    @Test func aWholeDeliveryMovesThroughEveryStatusByTheRightHandsWithItsEvents() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let driver = Person(role: .driver)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            let moves = try await tracking.deliver(order, owner: owner, driver: driver)
            #expect(moves.count == 10)
            for (index, (status, person, response)) in moves.enumerated() {
                #expect(response.status == 200, "\(status) by \(person.role): \(response.text)")
                #expect(response.headers["etag"] == "\"\(index + 2)\"")
                #expect(try response.json()["status"] as? String == status)
            }
            let version = moves.count + 1
            let final = try await tracking.call(.get, "/v1/orders/\(order)", as: customer).json()
            let history = try #require(final["statusHistory"] as? [[String: Any]])
            #expect(
                history.map { $0["status"] as? String } == [
                    "placed", "accepted", "preparing", "ready_for_pickup", "driver_assigned", "enroute_to_pickup",
                    "arrived_at_pickup", "picked_up", "enroute_to_dropoff", "arrived_at_dropoff", "delivered",
                ]
            )
            #expect((history[1]["by"] as? [String: Any])?["role"] as? String == "restaurant")
            #expect((history.last?["by"] as? [String: Any])?["userId"] as? String == driver.id.lowercased)
            // A delivered order moves no more.
            let after = try await tracking.move(order, to: "cancelled", as: tracking.adminPerson, version: "\"\(version)\"")
            #expect(after.status == 409)

            // v2 for every move; the v1 twins only for what v1 can say, each once.
            let events = try await tracking.published(about: order)
            #expect(events.filter { $0.type == OrderStatusChanged.type }.count == 10)
            let v1 = try events.filter { $0.type == OrderStatusChangedV1.type }.map { try $0.decode(OrderStatusChangedV1.self).status }
            #expect(v1 == [.accepted, .preparing, .ready, .pickedUp, .delivered])
            #expect(events.map(\.type).filter { $0.hasPrefix("tracking.order.placed") } == [OrderPlaced.type, OrderPlacedV1.type])
            let assigned = try #require(events.first { $0.type == DriverAssigned.type }).decode(DriverAssigned.self)
            #expect(assigned.parties.driverId == driver.id && assigned.parties.restaurantOwnerId == owner.id)
            #expect(events.contains { $0.type == DriverAssignedV1.type })
        }
    }

    @Test func eachRoleMakesOnlyItsOwnMovesOnItsOwnOrdersAndOthersSeeNothing() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let otherOwner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let stranger = Person(role: .customer)
            let driver = Person(role: .driver)
            let otherDriver = Person(role: .driver)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            _ = try await tracking.restaurant(owner: otherOwner)
            let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)

            // The customer cannot accept: 409 naming both statuses.
            let accept = try await tracking.move(order, to: "accepted", as: customer, version: "\"1\"")
            #expect(accept.status == 409)
            #expect(try accept.json()["currentStatus"] as? String == "placed")
            #expect(try accept.json()["requestedStatus"] as? String == "accepted")
            // Another restaurant's owner, another customer, a driver not on it: not their order.
            for person in [otherOwner, stranger, otherDriver] {
                #expect(try await tracking.move(order, to: "accepted", as: person, version: "\"1\"").status == 404)
                #expect(try await tracking.call(.get, "/v1/orders/\(order)", as: person).status == 404)
            }
            // A skip is refused even to the restaurant.
            #expect(try await tracking.move(order, to: "ready_for_pickup", as: owner, version: "\"1\"").status == 409)
            #expect(try await tracking.move(order, to: "accepted", as: owner, version: "\"1\"").status == 200)
            #expect(try await tracking.move(order, to: "preparing", as: owner, version: "\"2\"").status == 200)
            // Once preparing, the customer can no longer cancel; the restaurant still can.
            let late = try await tracking.move(order, to: "cancelled", as: customer, version: "\"3\"")
            #expect(late.status == 409)
            #expect(try late.json()["currentStatus"] as? String == "preparing")
            #expect(try await tracking.move(order, to: "ready_for_pickup", as: owner, version: "\"3\"").status == 200)
            // The restaurant does not assign drivers, nor drive.
            #expect(
                try await tracking.move(order, to: "driver_assigned", as: owner, version: "\"4\"", extra: #","driverId":"\#(driver.id.lowercased)""#)
                    .status == 409
            )
            #expect(
                try await tracking.move(
                    order,
                    to: "driver_assigned",
                    as: tracking.adminPerson,
                    version: "\"4\"",
                    extra: #","driverId":"\#(driver.id.lowercased)""#
                ).status == 200
            )
            #expect(try await tracking.move(order, to: "enroute_to_pickup", as: owner, version: "\"5\"").status == 409)
            #expect(try await tracking.move(order, to: "enroute_to_pickup", as: otherDriver, version: "\"5\"").status == 404)
            #expect(try await tracking.move(order, to: "enroute_to_pickup", as: driver, version: "\"5\"").status == 200)
            // The driver gives it back: they no longer see it.
            #expect(try await tracking.move(order, to: "ready_for_pickup", as: driver, version: "\"6\"").status == 200)
            #expect(try await tracking.call(.get, "/v1/orders/\(order)", as: driver).status == 404)
            #expect(try await tracking.call(.get, "/v1/orders/\(order)", as: owner).status == 200)
            // A cancellation before pickup by the restaurant ends it; a move of an unknown status is 422.
            #expect(try await tracking.move(order, to: "eaten", as: owner, version: "\"7\"").status == 422)
            #expect(try await tracking.move(order, to: "cancelled", as: owner, version: "\"7\"", extra: #","reason":"out of dough""#).status == 200)
            #expect(try await tracking.move(order, to: "accepted", as: owner, version: "\"8\"").status == 409)
        }
    }

    @Test func twoClientsWithTheSameVersionGetOneSuccessAndOne412AndNoVersionIs428() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            let read = try await tracking.call(.get, "/v1/orders/\(order)", as: owner)
            let etag = try #require(read.headers["etag"])
            #expect(try await tracking.call(.get, "/v1/orders/\(order)", as: owner, headers: [("If-None-Match", etag)]).status == 304)

            #expect(try await tracking.move(order, to: "accepted", as: owner, version: nil).status == 428)
            async let first = tracking.move(order, to: "accepted", as: owner, version: etag)
            async let second = tracking.call(
                .patch,
                "/v1/orders/\(order)",
                as: customer,
                headers: [("If-Match", etag)],
                json: #"{"notes":"Ring twice"}"#
            )
            let statuses = try await [first.status, second.status].sorted()
            #expect(statuses == [200, 412])
            let final = try await tracking.call(.get, "/v1/orders/\(order)", as: owner).json()
            #expect(final["version"] as? Int == 2)
            // Whichever won is there whole; the loser changed nothing.
            #expect((final["status"] as? String == "accepted") != (final["notes"] as? String == "Ring twice"))
            #expect(try await tracking.call(.patch, "/v1/orders/\(order)", as: customer, json: #"{"notes":"x"}"#).status == 428)
            #expect(
                try await tracking.call(.patch, "/v1/orders/\(order)", as: customer, headers: [("If-Match", "\"1\"")], json: #"{"notes":"x"}"#).status
                    == 412
            )
            // `If-Match: *` asks only that the resource exist (RFC 9110): the change applies at
            // whatever version it has (schemathesis found it refused with 412).
            let any = try await tracking.call(
                .patch,
                "/v1/restaurants/\(restaurant)",
                as: owner,
                headers: [("If-Match", "*")],
                json: #"{"name":"Any version"}"#
            )
            let version = try any.json()["version"] as? Int
            #expect(any.status == 200 && version == 2, "\(any.status) \(any.text)")
        }
    }

    @Test func aClientThatWasOfflineGetsExactlyWhatChangedMeanwhile() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            var orders: [String] = []
            for _ in 0..<6 {
                orders.append(try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String))
            }
            let synced = try await tracking.call(.get, "/v1/orders?role=restaurant", as: owner).json()
            #expect((synced["items"] as? [Any])?.count == 6)
            let token = try #require(synced["syncToken"] as? String)
            // Offline: three orders change and one is cancelled; two stay as they were.
            for order in orders[0..<3] {
                #expect(try await tracking.move(order, to: "accepted", as: owner, version: "\"1\"").status == 200)
            }
            #expect(try await tracking.move(orders[3], to: "cancelled", as: customer, version: "\"1\"").status == 200)
            let delta = try await tracking.call(.get, "/v1/orders?role=restaurant&since=\(token)", as: owner).json()
            let changed = Set(try #require(delta["items"] as? [[String: Any]]).compactMap { $0["id"] as? String })
            #expect(changed == Set(orders[0..<4]))
            #expect(delta["syncToken"] as? String != nil)
            // Nothing more since then.
            let quiet = try await tracking.call(.get, "/v1/orders?role=restaurant&since=\(try #require(delta["syncToken"] as? String))", as: owner)
                .json()
            #expect((quiet["items"] as? [Any])?.isEmpty == true)
            #expect(try await tracking.call(.get, "/v1/orders?since=nonsense", as: owner).status == 422)
            // A token of the numbered kind orders gave before the shared mechanism: start over.
            let numbered = try await tracking.call(.get, "/v1/orders?since=s42", as: owner)
            #expect(numbered.status == 410 && numbered.text.contains("sync_token_expired"))
            // Another user's token is not theirs to use.
            #expect(try await tracking.call(.get, "/v1/orders?since=\(token)", as: customer).status == 422)
        }
    }

    @Test func aDriverWhoGivesAnOrderBackGetsItsTombstoneOnSync() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let driver = Person(role: .driver)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            for (index, status) in ["accepted", "preparing", "ready_for_pickup"].enumerated() {
                #expect(try await tracking.move(order, to: status, as: owner, version: "\"\(index + 1)\"").status == 200)
            }
            #expect(
                try await tracking.move(
                    order,
                    to: "driver_assigned",
                    as: tracking.adminPerson,
                    version: "\"4\"",
                    extra: #","driverId":"\#(driver.id.lowercased)""#
                ).status == 200
            )
            let synced = try await tracking.call(.get, "/v1/orders?role=driver", as: driver).json()
            #expect((synced["items"] as? [[String: Any]])?.first?["id"] as? String == order)
            #expect(try await tracking.move(order, to: "ready_for_pickup", as: driver, version: "\"5\"").status == 200)
            let delta = try await tracking.call(.get, "/v1/orders?role=driver&since=\(try #require(synced["syncToken"] as? String))", as: driver)
                .json()
            #expect((delta["items"] as? [Any])?.isEmpty == true)
            #expect(delta["deleted"] as? [String] == [order])
        }
    }
}

@Suite("The order state machine") struct OrderMachineTests {
    @Test func everyMoveHasItsHandsAndNothingLeavesAnEnd() {
        typealias M = OrderMachine
        #expect(M.allows(.restaurant, from: .placed, to: .accepted))
        #expect(M.allows(.restaurant, from: .placed, to: .rejected))
        #expect(!M.allows(.customer, from: .placed, to: .accepted))
        #expect(!M.allows(.driver, from: .placed, to: .accepted))
        #expect(M.allows(.dispatch, from: .readyForPickup, to: .driverAssigned))
        #expect(!M.allows(.restaurant, from: .readyForPickup, to: .driverAssigned))
        #expect(M.allows(.driver, from: .driverAssigned, to: .enrouteToPickup))
        #expect(!M.allows(.driver, from: .driverAssigned, to: .arrivedAtPickup))
        #expect(M.allows(.driver, from: .enrouteToPickup, to: .readyForPickup))
        #expect(!M.allows(.driver, from: .arrivedAtPickup, to: .readyForPickup))
        #expect(M.allows(.customer, from: .accepted, to: .cancelled))
        #expect(!M.allows(.customer, from: .preparing, to: .cancelled))
        #expect(M.allows(.restaurant, from: .arrivedAtPickup, to: .cancelled))
        #expect(!M.allows(.restaurant, from: .pickedUp, to: .cancelled))
        #expect(M.allows(.admin, from: .enrouteToDropoff, to: .cancelled))
        for end in M.terminal {
            for status in OrderStatus.allCases {
                for party in [M.Party.customer, .restaurant, .driver, .admin, .dispatch] {
                    #expect(!M.allows(party, from: end, to: status))
                }
            }
        }
    }
}
