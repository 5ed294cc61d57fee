import Foundation
import Logging
import NIOHTTP1
import RoadNetwork
import ServiceKit

/// Customers ordering from random restaurants to random places in the area, and a kitchen (an
/// admin account: the seeded restaurants' owners have no passwords) that accepts, prepares and
/// readies the simulator's own orders after a while, so deliveries happen with no phone at all.
struct SimulatedCustomers: Sendable {
    let customers: [SimulatedAccount]
    let kitchen: SimulatedAccount
    let gateway: GatewayClient
    let graph: RoadGraph
    /// How often each customer orders, in simulated time.
    let orderEvery: Duration
    let speed: Double
    let seed: UInt64
    let logger: Logger

    func run() async {
        var random = SeededRandom(state: seed)
        let routable = graph.routableNodes
        var restaurants: [String] = []
        while !Task.isCancelled {
            do {
                if restaurants.isEmpty { restaurants = try await openRestaurants() }
                for customer in customers {
                    guard let restaurant = restaurants.randomElement(using: &random) else { break }
                    let menu =
                        try await gateway.expect([200], .GET, "/v1/restaurants/\(restaurant)", token: try await customer.accessToken()).json()["menu"]
                        as? [[String: Any]] ?? []
                    let available = menu.filter { $0["available"] as? Bool ?? false }
                    guard let item = available.randomElement(using: &random), let itemID = item["id"] as? String else { continue }
                    let drop = graph.nodes[routable.randomElement(using: &random)!]
                    let placed = try await gateway.expect(
                        [201],
                        .POST,
                        "/v1/orders",
                        token: try await customer.accessToken(),
                        json: [
                            "restaurantId": restaurant, "items": [["menuItemId": itemID, "quantity": Int.random(in: 4...20, using: &random)]],
                            "dropoff": ["address": "Simulated customer, Helsinki", "lat": drop.lat, "lng": drop.lng], "notes": "simulated",
                        ],
                        headers: [("Idempotency-Key", UUID().uuidString)]
                    ).json()
                    if let order = placed["id"] as? String {
                        logger.info("\(customer.email) ordered \(order) from \(restaurant)")
                        Task { await prepare(order) }
                    }
                }
            } catch {
                logger.warning("customers stumbled; trying again", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .milliseconds(Int(orderEvery.seconds / speed * 1_000)))
        }
    }

    private func openRestaurants() async throws -> [String] {
        let token = try await kitchen.accessToken()
        var ids: [String] = []
        var cursor: String?
        repeat {
            let page = try await gateway.expect(
                [200],
                .GET,
                "/v1/restaurants?open=true&limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""),
                token: token
            ).json()
            ids += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            cursor = page["nextCursor"] as? String
        } while cursor != nil && ids.count < 1_000
        return ids
    }

    /// The kitchen's moves: accepted, preparing, ready for pickup, a while apart.
    private func prepare(_ order: String) async {
        var version = 1
        for (status, wait) in [("accepted", 5.0), ("preparing", 5.0), ("ready_for_pickup", 20.0)] {
            try? await Task.sleep(for: .milliseconds(Int(wait / speed * 1_000)))
            guard let token = try? await kitchen.accessToken(),
                let answer = try? await gateway.call(
                    .POST,
                    "/v1/orders/\(order)/transitions",
                    token: token,
                    json: ["to": status],
                    headers: [("If-Match", "\"\(version)\"")]
                ),
                answer.status == 200
            else {
                logger.info("the kitchen could not move \(order) to \(status)")
                return
            }
            version = answer.json()["version"] as? Int ?? version + 1
        }
    }
}
