import Contracts
import Foundation
import Logging
import NIOHTTP1
import RoadNetwork
import ServiceKit

/// One driver: on shift at a random junction, sending a position every interval; given an order,
/// it drives the road route to the restaurant and on to the dropoff at the roads' speeds (with
/// jitter and short stops at junctions), `speed` times faster than real time, and makes each move
/// of the delivery as it gets there.
struct SimulatedDriver: Sendable {
    let account: SimulatedAccount
    let gateway: GatewayClient
    let graph: RoadGraph
    let interval: Duration
    let speed: Double
    let seed: UInt64
    let logger: Logger

    /// The moves before and after each leg.
    static let active: Set<String> = [
        "driver_assigned", "enroute_to_pickup", "arrived_at_pickup", "picked_up", "enroute_to_dropoff", "arrived_at_dropoff",
    ]
    /// An order in the kitchen with this driver reserved for it (tracking's early dispatch).
    static let reserved: Set<String> = ["accepted", "preparing", "ready_for_pickup"]

    func run() async {
        var random = SeededRandom(state: seed)
        let routable = graph.routableNodes
        var position = graph.nodes[routable.randomElement(using: &random)!]
        while !Task.isCancelled {
            do {
                let token = try await account.accessToken()
                _ = try await gateway.expect([200], .POST, "/v1/drivers/me/shift", token: token, json: ["onShift": true])
                while !Task.isCancelled {
                    if let order = try await activeOrder() {
                        position = try await deliver(order, from: position, random: &random)
                    } else {
                        // Waiting for an order: a position and a look at the orders every second.
                        try await send(position, heading: nil, speedMps: 0)
                        try await Task.sleep(for: max(interval, .seconds(1)))
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("driver \(account.email) stumbled; starting over", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }

    private func activeOrder() async throws -> [String: Any]? {
        let listing = try await gateway.expect([200], .GET, "/v1/orders?role=driver&limit=5", token: try await account.accessToken()).json()
        return (listing["items"] as? [[String: Any]] ?? []).first { Self.active.union(Self.reserved).contains($0["status"] as? String ?? "") }
    }

    /// Drives `order` from wherever it is to its end; returns where the driver is then.
    private func deliver(_ order: [String: Any], from start: Coordinate, random: inout SeededRandom) async throws -> Coordinate {
        guard let id = order["id"] as? String, let restaurantID = order["restaurantId"] as? String,
            let dropoff = order["dropoff"] as? [String: Any], let dropLat = dropoff["lat"] as? Double, let dropLng = dropoff["lng"] as? Double
        else { return start }
        var version = order["version"] as? Int ?? 1
        var status = order["status"] as? String ?? ""
        let restaurant = try await gateway.expect([200], .GET, "/v1/restaurants/\(restaurantID)", token: try await account.accessToken()).json()
        let location = restaurant["location"] as? [String: Any]
        let pickup = Coordinate(lat: location?["lat"] as? Double ?? start.lat, lng: location?["lng"] as? Double ?? start.lng)
        var position = start

        func move(_ to: String) async throws -> Bool {
            let answer = try await gateway.call(
                .POST,
                "/v1/orders/\(id)/transitions",
                token: try await account.accessToken(),
                json: ["to": to],
                headers: [("If-Match", "\"\(version)\"")]
            )
            guard answer.status == 200 else {
                logger.info("driver \(account.email) could not move \(id) to \(to): \(answer.status)")
                return false
            }
            version = answer.json()["version"] as? Int ?? version + 1
            status = to
            return true
        }

        if Self.reserved.contains(status) {
            // Reserved while the kitchen works: drive to the restaurant, and wait there for the
            // order to be ready and given to this driver.
            position = try await drive(graph.route(from: position, to: pickup), random: &random)
            while Self.reserved.contains(status) {
                try await send(position, heading: nil, speedMps: 0)
                try await Task.sleep(for: max(interval, .seconds(1)))
                let current = try await gateway.expect([200, 404], .GET, "/v1/orders/\(id)", token: try await account.accessToken())
                guard current.status == 200 else { return position }
                status = current.json()["status"] as? String ?? ""
                version = current.json()["version"] as? Int ?? version
            }
            guard status == "driver_assigned" else { return position }
        }
        if status == "driver_assigned" { guard try await move("enroute_to_pickup") else { return position } }
        if status == "enroute_to_pickup" {
            position = try await drive(graph.route(from: position, to: pickup), random: &random)
            guard try await move("arrived_at_pickup") else { return position }
        }
        if status == "arrived_at_pickup" {
            try await pause(seconds: 20, at: position)
            guard try await move("picked_up") else { return position }
        }
        if status == "picked_up" { guard try await move("enroute_to_dropoff") else { return position } }
        if status == "enroute_to_dropoff" {
            position = try await drive(graph.route(from: position, to: Coordinate(lat: dropLat, lng: dropLng)), random: &random)
            guard try await move("arrived_at_dropoff") else { return position }
        }
        if status == "arrived_at_dropoff" {
            try await pause(seconds: 15, at: position)
            _ = try await move("delivered")
        }
        return position
    }

    /// Follows `route`, `speed` times faster than real time: every interval, the car moves as far
    /// as it drove in the time that really passed (a late wake-up or a slow answer does not slow
    /// it down), and says where it is.
    private func drive(_ route: Route, random: inout SeededRandom) async throws -> Coordinate {
        var segment = 0
        var along = 0.0
        var stop = 0.0
        let lengths = route.segmentMetres
        guard !lengths.isEmpty else { return route.points.last ?? route.points[0] }
        var jitter = Double.random(in: 0.85...1.15, using: &random)
        var last = ContinuousClock.now
        while segment < lengths.count {
            try await Task.sleep(for: interval)
            let now = ContinuousClock.now
            var time = (now - last).seconds * speed
            last = now
            // A stop at a junction takes its time first.
            let waited = min(stop, time)
            stop -= waited
            time -= waited
            while time > 0, segment < lengths.count {
                let metresPerSecond = route.speeds[segment] * jitter
                let left = lengths[segment] - along
                if left <= metresPerSecond * time {
                    time -= left / metresPerSecond
                    segment += 1
                    along = 0
                    jitter = Double.random(in: 0.85...1.15, using: &random)
                    // A short stop at one node in thirty (the graph's nodes include a road's bends).
                    if Double.random(in: 0..<1, using: &random) < 1.0 / 30 {
                        stop = Double.random(in: 1...4, using: &random)
                        let waited = min(stop, time)
                        stop -= waited
                        time -= waited
                    }
                } else {
                    along += metresPerSecond * time
                    time = 0
                }
            }
            let here =
                segment < lengths.count
                ? route.points[segment].interpolated(to: route.points[segment + 1], fraction: along / max(lengths[segment], 0.001))
                : route.points[route.points.count - 1]
            let heading = segment < lengths.count ? route.points[segment].bearing(to: route.points[segment + 1]) : nil
            try await send(
                here,
                heading: heading,
                speedMps: stop > 0 || segment >= lengths.count ? 0 : route.speeds[min(segment, lengths.count - 1)] * jitter * speed
            )
        }
        return route.points[route.points.count - 1]
    }

    /// Waits `seconds` (simulated) at `position`, the phone saying where it is every interval
    /// meanwhile, as a real one does.
    private func pause(seconds: Double, at position: Coordinate) async throws {
        let end = ContinuousClock.now + .milliseconds(Int(seconds / speed * 1_000))
        while ContinuousClock.now < end {
            try await send(position, heading: nil, speedMps: 0)
            try await Task.sleep(for: min(interval, end - .now))
        }
    }

    private func send(_ position: Coordinate, heading: Double?, speedMps: Double) async throws {
        var point: [String: Any] = [
            "lat": position.lat, "lng": position.lng, "speedMps": min(speedMps, 150),
            "recordedAt": EventJSON.formatTimestamp(Date()), "accuracyM": 5,
        ]
        if let heading { point["heading"] = heading }
        _ = try await gateway.expect([200], .POST, "/v1/drivers/me/positions", token: try await account.accessToken(), json: [point])
    }
}
