import AsyncHTTPClient
import Contracts
import Foundation
import Identity
import LocalStack
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import RoadNetwork
import TestSupport
import Testing

extension TrackingAsProcesses {
    /// A whole delivery as it runs: auth, tracking and the gateway as processes on a real Postgres and
    /// the test Kafka cluster, three simulated drivers (`tracking-simulator`, 20 times real time)
    /// driving the roads, every call over sockets through the gateway, and the customer watching the
    /// order's `orders:{id}` WebSocket channel.
    @Suite("a whole delivery through the gateway") struct WholeDeliveryTests {
        @Test func theCustomerSeesEveryMoveInOrderAndTheCarComingWithAFallingETAUntilDelivered() async throws {
            try await WholeStackTurns.take {
                let stack = try await ProcessStack.start(trackingSettings: ["TRACKING_DISPATCH_INTERVAL": "100ms"])
                let database = stack.database
                let gateway = stack.gateway
                let api = GatewayAPI(base: gateway.baseURL)
                defer { Task { await stack.stop() } }

                // People: an admin (for the restaurant), the restaurant's account, a customer and a stranger.
                let admin = try await api.account("admin", role: "admin")
                let kitchen = try await api.account("kitchen", role: "restaurant")
                let customer = try await api.account("customer", role: "customer")
                let stranger = try await api.account("stranger", role: "customer")
                // The restaurant at a fixture place (Maya Bar & Grill), its owner the kitchen's account.
                let graph = try RoadGraph.helsinki()
                let place = try #require(graph.places.first { $0.name == "Maya Bar & Grill" })
                let restaurant =
                    try await api.expect(
                        201,
                        .POST,
                        "/v1/restaurants",
                        token: admin.token,
                        json: [
                            "ownerId": kitchen.id, "name": place.name, "location": ["lat": place.lat, "lng": place.lng],
                            "menu": [["id": "m1", "name": "Burger platter", "priceCents": 1_890]],
                        ]
                    )["id"] as! String

                // Three simulated drivers, on shift somewhere on the map.
                let simulator = try SimulatorProcess(gateway: gateway.baseURL, drivers: 3, speed: 20, interval: 0.25, seed: 7)
                defer { simulator.stop() }
                try await waitUntilReady("three drivers on shift with a position", timeout: .seconds(60)) {
                    (try? await database.count("tracking.drivers", where: "on_shift AND lat IS NOT NULL")) == 3
                }

                // The customer orders, and watches the order's channel; the stranger may not.
                let order =
                    try await api.expect(
                        201,
                        .POST,
                        "/v1/orders",
                        token: customer.token,
                        json: [
                            "restaurantId": restaurant, "items": [["menuItemId": "m1", "quantity": 3]],
                            "dropoff": ["address": "Senate Square", "lat": 60.1694, "lng": 24.9526],
                        ],
                        headers: [("Idempotency-Key", UUID().uuidString)]
                    )["id"] as! String
                let socket = RealtimeSocket(
                    url: gateway.baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/v1/realtime",
                    token: customer.token
                )
                let snoop = RealtimeSocket(
                    url: gateway.baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/v1/realtime",
                    token: stranger.token
                )
                defer {
                    Task {
                        await socket.disconnect()
                        await snoop.disconnect()
                    }
                }
                try await socket.send(#"{"op":"subscribe","channel":"orders:\#(order)","ref":"o"}"#)
                _ = try await socket.message { $0["op"] as? String == "subscribed" }
                try await snoop.send(#"{"op":"subscribe","channel":"orders:\#(order)","ref":"o"}"#)
                #expect(try await snoop.message { $0["op"] as? String == "error" }["code"] as? String == "forbidden")
                #expect(try await api.call(.GET, "/v1/orders/\(order)", token: stranger.token).status == 404)

                // The drivers' positions now, to know which is nearest by road to the restaurant.
                let positions = try await database.withClient { client in
                    try await client.query("SELECT user_id::text, lat, lng FROM tracking.drivers").collect().map {
                        try $0.decode((String, Double, Double).self)
                    }
                }
                let pickup = Coordinate(lat: place.lat, lng: place.lng)
                let nearest = try #require(
                    positions.min {
                        graph.route(from: .init(lat: $0.1, lng: $0.2), to: pickup).seconds
                            < graph.route(from: .init(lat: $1.1, lng: $1.2), to: pickup).seconds
                    }
                )

                // The kitchen accepts, prepares and readies it.
                var version = 1
                for status in ["accepted", "preparing", "ready_for_pickup"] {
                    let moved = try await api.expect(
                        200,
                        .POST,
                        "/v1/orders/\(order)/transitions",
                        token: kitchen.token,
                        json: ["to": status],
                        headers: [("If-Match", "\"\(version)\"")]
                    )
                    version = moved["version"] as! Int
                }

                // The simulated driver does the rest; the customer's channel sees it happen.
                let delivered = try await socket.message(within: .seconds(120)) {
                    ($0["data"] as? [String: Any])?["status"] as? String == "delivered"
                }
                let statuses = socket.messages.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                    .filter { $0["type"] as? String == OrderStatusChanged.type }.compactMap { ($0["data"] as? [String: Any])?["status"] as? String }
                #expect(
                    statuses == [
                        "accepted", "preparing", "ready_for_pickup", "driver_assigned", "enroute_to_pickup", "arrived_at_pickup",
                        "picked_up", "enroute_to_dropoff", "arrived_at_dropoff", "delivered",
                    ]
                )
                let final = try await api.expect(200, .GET, "/v1/orders/\(order)", token: customer.token)
                #expect(final["driverId"] as? String == nearest.0, "the dispatcher chose another driver than the nearest by road")

                // Positions with an ETA that falls as the car comes, from assignment to delivery.
                let events = socket.messages.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                let etas = events.filter { $0["type"] as? String == DriverLocationUpdated.type }.compactMap {
                    ($0["data"] as? [String: Any])?["etaSeconds"] as? Int
                }
                #expect(etas.count >= 10, "\(etas.count) positions with an ETA")
                // Announced as arriving once, as the car came within three minutes of the door.
                let arriving = events.filter { $0["type"] as? String == OrderArriving.type }
                #expect(arriving.count == 1, "\(arriving)")
                #expect((arriving.first?["data"] as? [String: Any])?["etaSeconds"] as? Int ?? .max <= OrderArriving.threshold)
                if let first = etas.first, let last = etas.last {
                    #expect(last < first)
                    let rises = zip(etas, etas.dropFirst()).filter { $1 > $0 + 2 }.count
                    #expect(rises * 5 < etas.count, "the ETA rose \(rises) times in \(etas.count)")
                }
                // After delivery, the driver's positions reach the customer no more.
                let countAtDelivery = socket.messages.count
                try await Task.sleep(for: .seconds(2))
                let later = socket.messages.dropFirst(countAtDelivery).compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                #expect(!later.contains { $0["type"] as? String == DriverLocationUpdated.type })
                _ = delivered
                // Everything stopped before the next test of the kind starts.
                simulator.stop()
                await socket.disconnect()
                await snoop.disconnect()
                await stack.stop()
            }
        }
    }
}
