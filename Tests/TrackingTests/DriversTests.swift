import Contracts
import Database
import EventBus
import Foundation
import LocalStack
import Logging
import PostgresNIO
import RoadNetwork
import ServiceKit
import TestSupport
import Testing

@testable import Tracking

@Suite("Drivers, positions and dispatch") struct DriversTests {
    typealias Person = TrackingHarness.Person

    @Test func badPointsAreRefusedByIndexABatchOf100IsOneRequestAndOnlyDriversSend() async throws {
        try await TrackingHarness.with { tracking in
            let driver = Person(role: .driver)
            let now = Date()
            func at(_ offset: TimeInterval) -> String { EventJSON.formatTimestamp(now.addingTimeInterval(offset)) }
            let batch = """
                [{"lat":60.17,"lng":24.94,"recordedAt":"\(at(-2))","speedMps":8.5,"heading":90},
                 {"lat":"NaN","lng":24.94,"recordedAt":"\(at(-2))"},
                 {"lat":95,"lng":24.94,"recordedAt":"\(at(-2))"},
                 {"lat":60.17,"lng":24.94,"recordedAt":"\(at(3_600))"},
                 {"lat":60.17,"lng":24.94,"recordedAt":"\(at(-3_600))"},
                 {"lat":60.17,"lng":24.94},
                 {"lat":60.171,"lng":24.941,"recordedAt":"\(at(-1))","accuracyM":4}]
                """
            let response = try await tracking.call(.post, "/v1/drivers/me/positions", as: driver, json: batch)
            #expect(response.status == 200, "\(response.text)")
            let body = try response.json()
            #expect(body["accepted"] as? Int == 2)
            let refused = try #require(body["refused"] as? [[String: Any]])
            #expect(refused.map { $0["index"] as? Int } == [1, 2, 3, 4, 5])
            #expect(refused.map { $0["field"] as? String } == ["lat", "lat", "recordedAt", "recordedAt", "recordedAt"])
            // The accepted ones are on tracking.locations, with no order (this driver has none).
            try await eventually("the positions on tracking.locations") {
                try await TestKafka.shared.events(on: TopicCatalog.trackingLocations.name, key: driver.id.lowercased).count == 2
            }
            let published = try await TestKafka.shared.events(on: TopicCatalog.trackingLocations.name, key: driver.id.lowercased)
                .map { try $0.decode(DriverLocationUpdated.self) }
            #expect(published.allSatisfy { $0.orderId == nil && $0.etaSeconds == nil })
            #expect(published.map(\.latitude) == [60.17, 60.171])

            let hundred = "[" + (0..<100).map { #"{"lat":60.17,"lng":24.94,"recordedAt":"\#(at(-Double($0) / 10))"}"# }.joined(separator: ",") + "]"
            #expect(try await tracking.call(.post, "/v1/drivers/me/positions", as: driver, json: hundred).json()["accepted"] as? Int == 100)
            let tooMany = "[" + Array(repeating: #"{"lat":60.17,"lng":24.94,"recordedAt":"\#(at(-1))"}"#, count: 101).joined(separator: ",") + "]"
            for bad in [tooMany, "[]", #"{"lat":1}"#, "nonsense"] {
                #expect(try await tracking.call(.post, "/v1/drivers/me/positions", as: driver, json: bad).status == 422, "\(bad.prefix(20))")
            }
            let customer = try await tracking.call(.post, "/v1/drivers/me/positions", as: Person(role: .customer), json: batch)
            #expect(customer.status == 403)
            // The latest position reaches the drivers table within a second or so.
            try await eventually("the latest position written") {
                try await tracking.database.count("tracking.drivers", where: "user_id = '\(driver.id.lowercased)' AND lat IS NOT NULL") == 1
            }
        }
    }

    @Test func theNearestFreeDriverByRoadGetsTheOrderAndItsPositionsThenCarryItsETA() async throws {
        try await TrackingHarness.with(["TRACKING_DISPATCH_INTERVAL": "100ms"]) { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            // Restaurant at the railway station; drivers at the cathedral, Kamppi and far south.
            let restaurant = try #require(try await tracking.restaurant(owner: owner, lat: 60.1710, lng: 24.9414)["id"] as? String)
            let drivers = [
                (Person(role: .driver), 60.1702, 24.9523), (Person(role: .driver), 60.1690, 24.9330), (Person(role: .driver), 60.1650, 24.9450),
            ]
            for (driver, lat, lng) in drivers {
                #expect(try await tracking.call(.post, "/v1/drivers/me/shift", as: driver, json: #"{"onShift":true}"#).status == 200)
                try await tracking.position(of: driver, lat: lat, lng: lng)
            }
            try await eventually("the drivers' positions written") {
                try await tracking.database.count("tracking.drivers", where: "lat IS NOT NULL AND on_shift") == 3
            }
            let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            for (index, status) in ["accepted", "preparing", "ready_for_pickup"].enumerated() {
                #expect(try await tracking.move(order, to: status, as: owner, version: "\"\(index + 1)\"").status == 200)
            }
            try await eventually("the dispatcher") {
                try await tracking.call(.get, "/v1/orders/\(order)", as: customer).json()["status"] as? String == "driver_assigned"
            }
            let assigned = try await tracking.call(.get, "/v1/orders/\(order)", as: customer).json()
            // By road, the nearest of the three (the test's own routing says which).
            let graph = try RoadGraph.helsinki()
            let pickup = Coordinate(lat: 60.1710, lng: 24.9414)
            let nearest = try #require(
                drivers.min {
                    graph.route(from: .init(lat: $0.1, lng: $0.2), to: pickup).seconds
                        < graph.route(from: .init(lat: $1.1, lng: $1.2), to: pickup).seconds
                }
            )
            #expect(assigned["driverId"] as? String == nearest.0.id.lowercased)
            #expect(((assigned["statusHistory"] as? [[String: Any]])?.last?["by"] as? [String: Any])?["role"] as? String == "dispatch")

            // Its positions now carry the order and an ETA; the route is there for its parties.
            try await tracking.position(of: nearest.0, lat: nearest.1, lng: nearest.2)
            try await eventually("a position with the order") {
                try await TestKafka.shared.events(on: TopicCatalog.trackingLocations.name, key: nearest.0.id.lowercased)
                    .contains { (try? $0.decode(DriverLocationUpdated.self))?.orderId?.lowercased == order }
            }
            let located = try #require(
                try await TestKafka.shared.events(on: TopicCatalog.trackingLocations.name, key: nearest.0.id.lowercased)
                    .compactMap { try? $0.decode(DriverLocationUpdated.self) }.last { $0.orderId != nil }
            )
            #expect((located.etaSeconds ?? 0) > 0)
            let route = try await tracking.call(.get, "/v1/orders/\(order)/route", as: customer).json()
            #expect(route["routing"] as? String == "road")
            #expect(((route["points"] as? [[Double]])?.count ?? 0) > 2)
            #expect(abs((route["remainingSeconds"] as? Int ?? 0) - (located.etaSeconds ?? 0)) <= 2)
            #expect(try await tracking.call(.get, "/v1/orders/\(order)/route", as: Person(role: .customer)).status == 404)
        }
    }

    /// `TRACKING_DISPATCH_EARLY`: an accepted order gets the nearest free driver reserved while the
    /// kitchen works (its status stays, the driver sees it, is announced and given nothing else);
    /// once it is ready, that driver's legs begin.
    @Test func earlyDispatchReservesTheNearestDriverWhileTheKitchenWorksAndAssignsThemWhenReady() async throws {
        try await TrackingHarness.with(["TRACKING_DISPATCH_INTERVAL": "100ms", "TRACKING_DISPATCH_EARLY": "true"]) { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let restaurant = try #require(try await tracking.restaurant(owner: owner, lat: 60.1710, lng: 24.9414)["id"] as? String)
            // Two drivers; which is nearer by road, the test's own routing says.
            let places = [(60.1702, 24.9523), (60.1590, 24.9560)]
            let graph = try RoadGraph.helsinki()
            let pickup = Coordinate(lat: 60.1710, lng: 24.9414)
            let seconds = places.map { graph.route(from: Coordinate(lat: $0.0, lng: $0.1), to: pickup).seconds }
            let drivers = [Person(role: .driver), Person(role: .driver)]
            let (near, far) = seconds[0] < seconds[1] ? (drivers[0], drivers[1]) : (drivers[1], drivers[0])
            for (driver, (lat, lng)) in zip(drivers, places) {
                #expect(try await tracking.call(.post, "/v1/drivers/me/shift", as: driver, json: #"{"onShift":true}"#).status == 200)
                try await tracking.position(of: driver, lat: lat, lng: lng)
            }
            try await eventually("the drivers' positions written") {
                try await tracking.database.count("tracking.drivers", where: "lat IS NOT NULL AND on_shift") == 2
            }
            // A placed order waits for the kitchen, not for a driver.
            let first = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await tracking.call(.get, "/v1/orders/\(first)", as: customer).json()["driverId"] == nil)

            #expect(try await tracking.move(first, to: "accepted", as: owner, version: "\"1\"").status == 200)
            try await eventually("a driver reserved") {
                try await tracking.call(.get, "/v1/orders/\(first)", as: customer).json()["driverId"] as? String != nil
            }
            let reserved = try await tracking.call(.get, "/v1/orders/\(first)", as: customer).json()
            #expect(reserved["driverId"] as? String == near.id.lowercased && reserved["status"] as? String == "accepted")
            #expect((reserved["statusHistory"] as? [[String: Any]])?.map { $0["status"] as? String } == ["placed", "accepted"])
            let listed = try await tracking.call(.get, "/v1/orders?role=driver", as: near).json()["items"] as? [[String: Any]]
            #expect(listed?.map { $0["id"] as? String } == [first])
            let announced = try await TestKafka.shared.events(on: TopicCatalog.trackingOrders.name, key: first)
                .filter { $0.type == DriverAssigned.type }.map { try $0.decode(DriverAssigned.self) }
            #expect(announced.count == 1 && announced.first?.parties.driverId == near.id && (announced.first?.etaSeconds ?? 0) > 0)

            // The near driver is taken: the next accepted order gets the far one, a third none.
            let second = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            #expect(try await tracking.move(second, to: "accepted", as: owner, version: "\"1\"").status == 200)
            try await eventually("the second driver reserved") {
                try await tracking.call(.get, "/v1/orders/\(second)", as: customer).json()["driverId"] as? String == far.id.lowercased
            }
            let third = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
            #expect(try await tracking.move(third, to: "accepted", as: owner, version: "\"1\"").status == 200)

            // Ready: the reserved driver's legs begin, by the dispatcher.
            let version = try #require(try await tracking.call(.get, "/v1/orders/\(first)", as: owner).json()["version"] as? Int)
            #expect(try await tracking.move(first, to: "preparing", as: owner, version: "\"\(version)\"").status == 200)
            #expect(try await tracking.move(first, to: "ready_for_pickup", as: owner, version: "\"\(version + 1)\"").status == 200)
            try await eventually("the legs begun") {
                try await tracking.call(.get, "/v1/orders/\(first)", as: customer).json()["status"] as? String == "driver_assigned"
            }
            let assigned = try await tracking.call(.get, "/v1/orders/\(first)", as: customer).json()
            #expect(assigned["driverId"] as? String == near.id.lowercased)
            #expect(((assigned["statusHistory"] as? [[String: Any]])?.last?["by"] as? [String: Any])?["role"] as? String == "dispatch")
            #expect(
                try await TestKafka.shared.events(on: TopicCatalog.trackingOrders.name, key: first).filter { $0.type == DriverAssigned.type }.count
                    == 1,
                "the reservation announced the driver; the move says the legs began"
            )
            #expect(try await tracking.call(.get, "/v1/orders/\(third)", as: customer).json()["driverId"] == nil, "no third driver")

            // Delivered, the near driver is free again: the third order is theirs.
            var step = try #require(assigned["version"] as? Int)
            for status in ["enroute_to_pickup", "arrived_at_pickup", "picked_up", "enroute_to_dropoff", "arrived_at_dropoff", "delivered"] {
                #expect(try await tracking.move(first, to: status, as: near, version: "\"\(step)\"").status == 200)
                step += 1
            }
            try await eventually("the third order reserved") {
                try await tracking.call(.get, "/v1/orders/\(third)", as: customer).json()["driverId"] as? String == near.id.lowercased
            }
        }
    }

    /// Many batches at once share their lookups of the drivers' orders; each still gets its own
    /// driver's order, or none.
    @Test func concurrentLookupsOfDriversOrdersEachGetTheirOwn() async throws {
        try await TrackingHarness.with { tracking in
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            let drivers = (0..<12).map { _ in Person(role: .driver) }
            var assigned: [UUID: String] = [:]
            for driver in drivers.prefix(6) {
                let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
                for (index, status) in ["accepted", "preparing", "ready_for_pickup"].enumerated() {
                    #expect(try await tracking.move(order, to: status, as: owner, version: "\"\(index + 1)\"").status == 200)
                }
                let admin = Person(id: tracking.admin, role: .admin)
                #expect(
                    try await tracking.move(
                        order,
                        to: "driver_assigned",
                        as: admin,
                        version: "\"4\"",
                        extra: #","driverId":"\#(driver.id.lowercased)""#
                    ).status == 200
                )
                assigned[driver.id] = order
            }
            let expected = assigned
            // Sessions acting for the service, as tracking's own are.
            let settings = try DatabaseSettings(from: ConfigurationReader(["DATABASE_URL": tracking.databaseURL]))
            let client = PostgresClient(configuration: settings.serviceSessions(maximumConnections: 2))
            try await withRunningServices([client]) {
                let lookup = ActiveOrderLookup(client: client, logger: Logger(label: "lookup"))
                let found = try await withThrowingTaskGroup(of: (UUID, String?).self) { group in
                    for round in 0..<240 {
                        let driver = drivers[round % drivers.count].id
                        group.addTask { (driver, try await lookup.order(of: driver)?.id.lowercased) }
                    }
                    return try await group.reduce(into: [(UUID, String?)]()) { $0.append($1) }
                }
                #expect(found.count == 240)
                for (driver, order) in found { #expect(order == expected[driver], "driver \(driver)") }
            }
        }
    }

    @Test func twoDispatcherReplicasGiveOneFreeDriverOneOrderOnly() async throws {
        try await TrackingHarness.with(["TRACKING_DISPATCH_INTERVAL": "50ms"]) { tracking in
            // A second replica on the same database, dispatching as often.
            let environment = tracking.environment
            let replica = try await ServiceProcess("tracking", environment: environment)
            let owner = Person(role: .restaurant)
            let customer = Person(role: .customer)
            let driver = Person(role: .driver)
            let restaurant = try #require(try await tracking.restaurant(owner: owner)["id"] as? String)
            var orders: [String] = []
            for _ in 0..<2 {
                let order = try #require(try await tracking.place(at: restaurant, as: customer).json()["id"] as? String)
                for (index, status) in ["accepted", "preparing", "ready_for_pickup"].enumerated() {
                    #expect(try await tracking.move(order, to: status, as: owner, version: "\"\(index + 1)\"").status == 200)
                }
                orders.append(order)
            }
            #expect(try await tracking.call(.post, "/v1/drivers/me/shift", as: driver, json: #"{"onShift":true}"#).status == 200)
            try await tracking.position(of: driver, lat: 60.1702, lng: 24.9523)
            try await eventually("an assignment") {
                try await tracking.database.count("tracking.orders", where: "status = 'driver_assigned'") == 1
            }
            // Both replicas keep trying for a while: still one.
            try await Task.sleep(for: .seconds(2))
            #expect(try await tracking.database.count("tracking.orders", where: "status = 'driver_assigned'") == 1)
            #expect(try await tracking.database.count("tracking.orders", where: "status = 'ready_for_pickup'") == 1)
            #expect(try await tracking.database.count("tracking.orders", where: "driver_id = '\(driver.id.lowercased)'") == 1)
            await replica.stop()
        }
    }
}
