import Contracts
import Database
import EventBus
import Foundation
import Kafka
import Logging
import PostgresNIO
import RoadNetwork
import ServiceKit
import Synchronization

/// One point a driver's phone sends.
struct PositionReport: Sendable, Equatable {
    var coordinate: Coordinate
    var heading: Double?
    var speedMps: Double?
    var accuracyM: Double?
    var recordedAt: Date
}

/// A point refused, by its index in the batch.
struct RefusedPoint: Encodable, Sendable, Equatable {
    var index: Int
    var field: String
    var detail: String
}

/// Driver positions, the hot path: checked point by point, published straight to
/// `tracking.locations` (key: the driver; the idempotent producer, not the outbox: telemetry is
/// not state), with the order the driver is on and its ETA only while the order's parties may see
/// the car (from `driver_assigned` until it ends). The latest point of each driver is kept in
/// memory and written to `drivers` at most once a second (`flush`), for the dispatcher.
final class PositionIngest: Sendable {
    let client: PostgresClient
    /// Sessions acting for the service: the active-order lookup is one round trip.
    let serviceReads: PostgresClient
    let producer: KafkaProducer
    let graph: RoadGraph
    let logger: Logger
    /// How old a point may be.
    static let maxAge: TimeInterval = 600
    /// How far ahead of the server's clock a point may claim to be (phones' clocks drift).
    static let maxSkew: TimeInterval = 30

    private struct Latest {
        var points: [UUID: PositionReport] = [:]
        var dirty: Set<UUID> = []
        /// Recent points per driver on an order, each with the speed limit where it was, for
        /// their pace.
        var trail: [UUID: [(point: PositionReport, limit: Double)]] = [:]
    }

    private let latest = Mutex(Latest())

    init(client: PostgresClient, serviceReads: PostgresClient, producer: KafkaProducer, graph: RoadGraph, logger: Logger) {
        self.client = client
        self.serviceReads = serviceReads
        self.producer = producer
        self.graph = graph
        self.logger = logger
    }

    /// Each point checked: the good ones, and why the others were refused.
    static func check(_ points: [PositionReport?], fields: [[String]], now: Date = Date()) -> (accepted: [(Int, PositionReport)], refused: [RefusedPoint]) {
        var accepted: [(Int, PositionReport)] = []
        var refused: [RefusedPoint] = []
        for (index, point) in points.enumerated() {
            if let field = fields[index].first {
                refused.append(RefusedPoint(index: index, field: field, detail: "\(field) is missing, not a number, or out of range"))
                continue
            }
            guard let point else { continue }
            if point.recordedAt.timeIntervalSince(now) > maxSkew {
                refused.append(RefusedPoint(index: index, field: "recordedAt", detail: "recordedAt is in the future"))
            } else if now.timeIntervalSince(point.recordedAt) > maxAge {
                refused.append(RefusedPoint(index: index, field: "recordedAt", detail: "recordedAt is more than 10 minutes old"))
            } else {
                accepted.append((index, point))
            }
        }
        return (accepted, refused)
    }

    /// The order `driver` is on while its parties may see the car, with what its ETA needs.
    struct ActiveOrder: Sendable {
        var id: UUID
        var status: OrderStatus
        var pickup: Coordinate
        var dropoff: Coordinate
    }

    func activeOrder(of driver: UUID) async throws -> ActiveOrder? {
        let statuses = OrderMachine.withDriver.map(\.rawValue)
        let row = try await serviceReads.query("""
            SELECT o.id, o.status, r.lat, r.lng, o.dropoff_lat, o.dropoff_lng FROM orders o JOIN restaurants r ON r.id = o.restaurant_id
            WHERE o.driver_id = \(driver) AND o.status = ANY(\(statuses))
            """, logger: logger).collect().first
        guard let (id, status, lat, lng, dropoffLat, dropoffLng) = try row?.decode((UUID, String, Double, Double, Double, Double).self),
              let status = OrderStatus(rawValue: status) else { return nil }
        return ActiveOrder(id: id, status: status, pickup: Coordinate(lat: lat, lng: lng), dropoff: Coordinate(lat: dropoffLat, lng: dropoffLng))
    }

    /// The road time from `position` to the order's dropoff (through its pickup before it is
    /// picked up), at the edges' speeds scaled by how fast the driver has been going.
    func eta(from position: Coordinate, for order: ActiveOrder, driver: UUID) -> Int {
        let route = graph.deliveryRoute(from: position, status: order.status, pickup: order.pickup, dropoff: order.dropoff)
        return Int((route.seconds / pace(of: driver)).rounded())
    }

    /// How much faster (above 1) or slower than the roads' speed limits the driver has been
    /// moving over their last minute: the time the roads they covered take at their limits over
    /// the time they took, counting only the stretches where they moved (a wait at the restaurant
    /// or a red light says nothing of how fast they drive); 1 until they have moved for 3 s.
    func pace(of driver: UUID) -> Double {
        let trail = latest.withLock { $0.trail[driver] ?? [] }
        var roadSeconds = 0.0, elapsed = 0.0
        for (a, b) in zip(trail, trail.dropFirst()) {
            let metres = a.point.coordinate.metres(to: b.point.coordinate)
            let seconds = b.point.recordedAt.timeIntervalSince(a.point.recordedAt)
            guard metres >= 1, seconds > 0 else { continue }
            roadSeconds += metres / b.limit
            elapsed += seconds
        }
        guard elapsed >= 3 else { return 1 }
        return min(20, max(0.2, roadSeconds / elapsed))
    }

    /// Publishes the accepted points of `driver`, in the order recorded, each with its order and
    /// ETA while the order's parties may see the car.
    func publish(_ points: [PositionReport], driver: UUID) async throws {
        let sorted = points.sorted { $0.recordedAt < $1.recordedAt }
        guard let newest = sorted.last else { return }
        let order = try await activeOrder(of: driver)
        remember(sorted, driver: driver, onOrder: order != nil)
        // One route for the batch: earlier points' ETAs add the time between them and the newest.
        let newestETA = order.map { eta(from: newest.coordinate, for: $0, driver: driver) }
        var records: [KafkaRecord] = []
        for point in sorted {
            let eta = newestETA.map { $0 + Int(newest.recordedAt.timeIntervalSince(point.recordedAt).rounded()) }
            let event = DriverLocationUpdated(driverId: driver, orderId: order?.id, latitude: point.coordinate.lat, longitude: point.coordinate.lng,
                                              heading: point.heading, speedMps: point.speedMps, accuracyM: point.accuracyM, etaSeconds: eta,
                                              recordedAt: point.recordedAt)
            records.append(try EventEnvelope(event, source: "/splash/tracking", subject: event.aggregateID).record(topic: TopicCatalog.trackingLocations.name))
        }
        for result in await producer.send(records) {
            if case .failure(let error) = result { throw error }
        }
    }

    /// Keeps the newest point of `driver` (for the database and the route) and, while they are on
    /// an order, their last minute of points with the speed limits there (for their pace).
    private func remember(_ points: [PositionReport], driver: UUID, onOrder: Bool) {
        let limited = onOrder ? points.map { ($0, graph.speedLimit(near: $0.coordinate)) } : []
        latest.withLock { state in
            guard let newest = points.last else { return }
            if (state.points[driver]?.recordedAt ?? .distantPast) < newest.recordedAt {
                state.points[driver] = newest
                state.dirty.insert(driver)
            }
            guard onOrder else {
                state.trail[driver] = nil
                return
            }
            var trail = (state.trail[driver] ?? []) + limited
            trail.sort { $0.point.recordedAt < $1.point.recordedAt }
            trail.removeAll { newest.recordedAt.timeIntervalSince($0.point.recordedAt) > 60 }
            state.trail[driver] = Array(trail.suffix(240))
        }
    }

    /// The latest point of `driver`: this replica's own, or the one written to `drivers` (at most
    /// a second behind another replica's).
    func latestPosition(of driver: UUID) async throws -> Coordinate? {
        if let point = latest.withLock({ $0.points[driver] }) { return point.coordinate }
        return try await client.withServiceTransaction(logger: logger) { [logger] connection in
            try await connection.query("SELECT lat, lng FROM drivers WHERE user_id = \(driver) AND lat IS NOT NULL", logger: logger)
                .collect().first.map { row in
                    let (lat, lng) = try row.decode((Double, Double).self)
                    return Coordinate(lat: lat, lng: lng)
                }
        }
    }

    /// What is left of an order's way: from its driver's latest point (through the restaurant
    /// until picked up), or from the restaurant while no driver is on it.
    func remainingRoute(of order: Order, pickup: Coordinate) async throws -> Route {
        if let driver = order.driverId, OrderMachine.withDriver.contains(order.status), let position = try await latestPosition(of: driver) {
            return graph.deliveryRoute(from: position, status: order.status, pickup: pickup, dropoff: order.dropoff.coordinate)
        }
        return graph.route(from: pickup, to: order.dropoff.coordinate)
    }

    /// Writes the latest point of every driver who moved since the last flush, in one statement.
    func flush() async throws {
        let points = latest.withLock { state in
            let points = state.dirty.compactMap { driver in state.points[driver].map { (driver, $0) } }
            state.dirty.removeAll()
            return points
        }
        guard !points.isEmpty else { return }
        try await client.withServiceTransaction(logger: logger) { [logger] connection in
            try await connection.query("""
                INSERT INTO drivers (user_id, lat, lng, speed_mps, position_at)
                SELECT driver, lat, lng, nullif(speed, -1), at
                FROM unnest(\(points.map(\.0))::uuid[], \(points.map(\.1.coordinate.lat))::float8[], \(points.map(\.1.coordinate.lng))::float8[],
                            \(points.map { $0.1.speedMps ?? -1 })::float8[], \(points.map(\.1.recordedAt))::timestamptz[]) AS point(driver, lat, lng, speed, at)
                ON CONFLICT (user_id) DO UPDATE SET lat = excluded.lat, lng = excluded.lng,
                    speed_mps = excluded.speed_mps, position_at = excluded.position_at, updated_at = clock_timestamp()
                WHERE drivers.position_at IS NULL OR drivers.position_at < excluded.position_at
                """, logger: logger)
        }
    }
}
