import Contracts
import Foundation
import LocalStack
import RoadNetwork
import ServiceKit
import TestSupport
import Testing

extension TrackingAsProcesses {
    /// The ETA the customer is shown against when the car really arrives: auth, tracking and the
    /// gateway as processes, seven simulated drivers (`tracking-simulator`, 20 times real time,
    /// jitter of ±15 % per road and short stops at junctions) delivering 20 orders from fixture
    /// restaurants to places 3–10 minutes' drive away. Seed 24: the restaurants, the dropoffs and
    /// the simulator's choices (`--seed 24`).
    @Suite("ETAs against arrivals") struct ETAAccuracyTests {
        static let seed: UInt64 = 24

        @Test func theETAGivenAtPickupIsWithin15PercentOfTheArrivalOver20Deliveries() async throws {
            try await WholeStackTurns.take {
                let stack = try await ProcessStack.start(trackingSettings: ["TRACKING_DISPATCH_INTERVAL": "100ms"])
                let api = GatewayAPI(base: stack.gateway.baseURL)
                defer { Task { await stack.stop() } }
                let admin = try await api.account("admin", role: "admin")
                let kitchen = try await api.account("kitchen", role: "restaurant")
                let customer = try await api.account("customer", role: "customer")

                // Ten fixture restaurants, and two dropoffs for each: 2 to 10 minutes away by road.
                let graph = try RoadGraph.helsinki()
                var random = SeededRandom(state: Self.seed)
                var deliveries: [(restaurant: String, dropoff: Coordinate)] = []
                for place in graph.places.shuffled(using: &random).prefix(10) {
                    let restaurant =
                        try await api.expect(
                            201,
                            .POST,
                            "/v1/restaurants",
                            token: admin.token,
                            json: [
                                "ownerId": kitchen.id, "name": place.name, "location": ["lat": place.lat, "lng": place.lng],
                                "menu": [["id": "m1", "name": "Catering tray", "priceCents": 4_500]],
                            ]
                        )["id"] as! String
                    var found = 0
                    while found < 2 {
                        let node = graph.nodes[graph.routableNodes.randomElement(using: &random)!]
                        let seconds = graph.route(from: Coordinate(lat: place.lat, lng: place.lng), to: node).seconds
                        guard (180...600).contains(seconds) else { continue }
                        deliveries.append((restaurant, node))
                        found += 1
                    }
                }

                let simulator = try SimulatorProcess(gateway: stack.gateway.baseURL, drivers: 7, speed: 20, interval: 0.2, seed: Self.seed)
                defer { simulator.stop() }
                try await waitUntilReady("seven drivers on shift with a position", timeout: .seconds(60)) {
                    (try? await stack.database.count("tracking.drivers", where: "on_shift AND lat IS NOT NULL")) == 7
                }
                var orders: [String] = []
                for (restaurant, dropoff) in deliveries {
                    let order =
                        try await api.expect(
                            201,
                            .POST,
                            "/v1/orders",
                            token: customer.token,
                            json: [
                                "restaurantId": restaurant, "items": [["menuItemId": "m1", "quantity": 1]],
                                "dropoff": ["address": "Somewhere in Helsinki", "lat": dropoff.lat, "lng": dropoff.lng],
                            ],
                            headers: [("Idempotency-Key", UUID().uuidString)]
                        )["id"] as! String
                    var version = 1
                    for status in ["accepted", "preparing", "ready_for_pickup"] {
                        version =
                            try await api.expect(
                                200,
                                .POST,
                                "/v1/orders/\(order)/transitions",
                                token: kitchen.token,
                                json: ["to": status],
                                headers: [("If-Match", "\"\(version)\"")]
                            )["version"] as! Int
                    }
                    orders.append(order)
                }
                let placed = orders.count
                try await waitUntilReady("20 deliveries", timeout: .seconds(360)) {
                    (try? await stack.database.count("tracking.orders", where: "status = 'delivered'")) == placed
                }
                simulator.stop()

                // Each order's pickup and arrival, from its history; the ETA its car's first
                // position after pickup carried, taken back to the moment of pickup.
                let positions = try await publishedEvents(
                    on: TopicCatalog.trackingLocations.name,
                    bootstrapServers: TestKafka.shared.running().bootstrapServers
                )
                .compactMap { try? $0.decode(DriverLocationUpdated.self) }
                var errors: [(order: String, eta: Double, actual: Double)] = []
                for order in orders {
                    let history =
                        try await api.expect(200, .GET, "/v1/orders/\(order)", token: customer.token)["statusHistory"] as? [[String: Any]] ?? []
                    func when(_ status: String) throws -> Date {
                        let entry = try #require(history.first { $0["status"] as? String == status }, "\(order) has no \(status)")
                        return try #require(EventJSON.parseTimestamp(entry["at"] as? String ?? ""))
                    }
                    let pickedUp = try when("picked_up")
                    let arrived = try when("arrived_at_dropoff")
                    let first = try #require(
                        positions.filter { $0.orderId?.lowercased == order && $0.recordedAt >= pickedUp && $0.etaSeconds != nil }
                            .min { $0.recordedAt < $1.recordedAt },
                        "no position of \(order) after its pickup"
                    )
                    let eta = Double(first.etaSeconds!) + first.recordedAt.timeIntervalSince(pickedUp)
                    errors.append((order, eta, arrived.timeIntervalSince(pickedUp)))
                    if abs(eta / arrived.timeIntervalSince(pickedUp) - 1) > 0.15 {
                        // What the customer saw, for whoever reads a failure: seconds from pickup, ETA.
                        let mine = positions.filter { $0.orderId?.lowercased == order }.sorted { $0.recordedAt < $1.recordedAt }
                        print(
                            "order \(order) picked up at \(pickedUp), arrived \(arrived); etas: "
                                + mine.map { "\(String(format: "%.2f", $0.recordedAt.timeIntervalSince(pickedUp))):\($0.etaSeconds ?? -1)" }.joined(
                                    separator: " "
                                )
                        )
                        print("  history: " + history.map { "\($0["status"] ?? ""):\($0["at"] ?? "")" }.joined(separator: " "))
                    }
                }
                let report = errors.map { String(format: "%+.0f%%", ($0.eta / $0.actual - 1) * 100) }.joined(separator: " ")
                print("ETA at pickup against arrival, seed \(Self.seed): \(report)")
                for (order, eta, actual) in errors {
                    #expect(
                        abs(eta - actual) <= 0.15 * actual,
                        "seed \(Self.seed), order \(order): ETA \(eta) s at pickup, arrived after \(actual) s"
                    )
                }
                await stack.stop()
            }
        }
    }
}
