import Contracts
import Database
import EventBus
import Foundation
import Identity
import Kafka
import Logging
import PositionReports
import PostgresNIO
import RoadNetwork
import ServiceKit
import Synchronization

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
    /// The order each driver is on (on sessions acting for the service: one round trip).
    let activeOrders: ActiveOrderLookup
    let producer: KafkaProducer
    /// Where `tracking.order.arriving.v1` goes, in the transaction that marks the order announced.
    let outbox: Outbox
    let graph: RoadGraph
    /// Accounts deleted lately (every replica reads them): their points are never written back
    /// after their erasure.
    let deletedUsers: DeletedUsers
    let logger: Logger
    /// How old a point may be.
    static let maxAge: TimeInterval = 600
    /// How far ahead of the server's clock a point may claim to be (phones' clocks drift).
    static let maxSkew: TimeInterval = 30

    private struct Latest {
        var points: [UUID: PositionReport] = [:]
        var dirty: Set<UUID> = []
        /// Each driver on an order: the route they follow and their pace along it.
        var trips: [UUID: Trip] = [:]
        /// The number of the next route followed (`DrivingPace`'s stretches).
        var nextStretch = 0
    }

    /// A driver on an order: the route they were given (to the dropoff, through the pickup until
    /// picked up), followed point by point, and their pace.
    struct Trip: Sendable {
        var order: UUID
        var throughPickup: Bool
        var stretch: Int
        var route: RouteFollower
        var pace = DrivingPace()
        /// Whether this replica saw the order announced as arriving (`announceArriving`).
        var announcedArriving = false
    }

    private let latest = Mutex(Latest())

    init(
        client: PostgresClient,
        serviceReads: PostgresClient,
        producer: KafkaProducer,
        outbox: Outbox,
        graph: RoadGraph,
        deletedUsers: DeletedUsers,
        logger: Logger
    ) {
        self.client = client
        self.deletedUsers = deletedUsers
        activeOrders = ActiveOrderLookup(client: serviceReads, logger: logger)
        self.producer = producer
        self.outbox = outbox
        self.graph = graph
        self.logger = logger
    }

    /// Each point checked: the good ones, and why the others were refused.
    static func check(
        _ points: [PositionReport?],
        fields: [[String]],
        now: Date = Date()
    ) -> (accepted: [(Int, PositionReport)], refused: [RefusedPoint]) {
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

    typealias ActiveOrder = ActiveOrderLookup.ActiveOrder

    /// The road time from `position` to the order's dropoff (through its pickup before it is
    /// picked up) along the route the driver follows (`RouteFollower`), at the edges' speeds scaled
    /// by the driver's pace (`DrivingPace`), which this position, recorded `at`, is noted in.
    /// `setOff`: where the driver was before this point, if lately.
    func eta(from position: Coordinate, at recordedAt: Date, setOff: Coordinate?, for order: ActiveOrder, driver: UUID) -> Int {
        let throughPickup = OrderMachine.beforePickup.contains(order.status)
        var trip = latest.withLock { $0.trips[driver] }
        let sameLeg = trip?.order == order.id && trip?.throughPickup == throughPickup
        var roadSeconds = sameLeg ? trip?.route.secondsLeft(from: position) : nil
        if roadSeconds == nil {
            // A new leg, or off the route: a route to follow (found outside the lock). A new leg's
            // is planned from where the driver set off — the pickup once picked up, where they were
            // before a new order's first point — as their own navigation planned it there (a point
            // a little way down the road may snap to a street they are not on); off the route, or
            // when the point is not on that plan, from where they are.
            var follower: RouteFollower?
            if !sameLeg, let start = throughPickup ? setOff : order.pickup {
                var planned = RouteFollower(
                    route: graph.deliveryRoute(from: start, status: order.status, pickup: order.pickup, dropoff: order.dropoff)
                )
                roadSeconds = planned.secondsLeft(from: position)
                if roadSeconds != nil { follower = planned }
            }
            let route: RouteFollower
            if let follower {
                route = follower
            } else {
                var here = RouteFollower(
                    route: graph.deliveryRoute(from: position, status: order.status, pickup: order.pickup, dropoff: order.dropoff)
                )
                roadSeconds = here.secondsLeft(from: position) ?? here.route.seconds
                route = here
            }
            trip = Trip(order: order.id, throughPickup: throughPickup, stretch: -1, route: route, pace: trip?.pace ?? DrivingPace())
        }
        guard var trip, let roadSeconds else { return 0 }
        let pace = latest.withLock { state in
            if trip.stretch < 0 {
                trip.stretch = state.nextStretch
                state.nextStretch += 1
            }
            trip.pace.note(at: recordedAt, stretch: trip.stretch, status: order.status, roadSecondsLeft: roadSeconds)
            state.trips[driver] = trip
            return trip.pace.pace(at: recordedAt)
        }
        return Int((roadSeconds / pace).rounded())
    }

    /// Publishes the accepted points of `driver`, in the order recorded, each with its order and
    /// ETA while the order's parties may see the car.
    func publish(_ points: [PositionReport], driver: UUID) async throws {
        let sorted = points.sorted { $0.recordedAt < $1.recordedAt }
        guard let newest = sorted.last else { return }
        let order = try await activeOrders.order(of: driver)
        let previous = remember(newest, driver: driver)
        let setOff = (sorted.dropLast().last ?? previous).flatMap { newest.recordedAt.timeIntervalSince($0.recordedAt) <= 60 ? $0.coordinate : nil }
        // One route for the batch: earlier points' ETAs add the time between them and the newest.
        let newestETA = order.map { eta(from: newest.coordinate, at: newest.recordedAt, setOff: setOff, for: $0, driver: driver) }
        var records: [KafkaRecord] = []
        for point in sorted {
            let eta = newestETA.map { $0 + Int(newest.recordedAt.timeIntervalSince(point.recordedAt).rounded()) }
            let event = DriverLocationUpdated(
                driverId: driver,
                orderId: order?.id,
                latitude: point.coordinate.lat,
                longitude: point.coordinate.lng,
                heading: point.heading,
                speedMps: point.speedMps,
                accuracyM: point.accuracyM,
                etaSeconds: eta,
                recordedAt: point.recordedAt
            )
            records.append(
                try EventEnvelope(event, source: "/splash/tracking", subject: event.aggregateID).record(topic: TopicCatalog.trackingLocations.name)
            )
        }
        for result in await producer.send(records) {
            if case .failure(let error) = result { throw error }
        }
        if let order, let eta = newestETA {
            try await announceArriving(order, eta: eta, driver: driver)
        }
    }

    /// Announces `order` as arriving (`tracking.order.arriving.v1`) the first time its ETA to the
    /// dropoff, after the pickup, is `OrderArriving.threshold` or less: once per order across
    /// replicas (the order row is marked in the outbox's transaction), and without a round trip once
    /// this replica has seen it done.
    func announceArriving(_ order: ActiveOrder, eta: Int, driver: UUID) async throws {
        guard eta <= OrderArriving.threshold, !OrderMachine.beforePickup.contains(order.status),
            !OrderMachine.terminal.contains(order.status)
        else { return }
        let seen = latest.withLock { state -> Bool in
            guard let trip = state.trips[driver], trip.order == order.id else { return false }
            if trip.announcedArriving { return true }
            state.trips[driver]?.announcedArriving = true
            return false
        }
        guard !seen else { return }
        try await client.withServiceTransaction(logger: logger) { [outbox, logger] connection in
            let rows = try await connection.query(
                """
                UPDATE orders SET arriving_announced_at = clock_timestamp()
                WHERE id = \(order.id) AND arriving_announced_at IS NULL
                RETURNING customer_id, restaurant_id, restaurant_owner_id, driver_id, arriving_announced_at, restaurant_name
                """,
                logger: logger
            )
            for try await (customer, restaurant, owner, driver, at, name) in rows.decode((UUID, UUID, UUID, UUID?, Date, String?).self) {
                let parties = OrderParties(customerId: customer, restaurantId: restaurant, restaurantOwnerId: owner, driverId: driver)
                var event = OrderArriving(orderId: order.id, parties: parties, etaSeconds: eta, arrivingAt: at)
                event.restaurantName = name
                try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
            }
        }
    }

    /// Keeps the newest point of `driver`, for the database and the route; returns the one it
    /// replaces.
    private func remember(_ newest: PositionReport, driver: UUID) -> PositionReport? {
        latest.withLock { state in
            let previous = state.points[driver]
            if (previous?.recordedAt ?? .distantPast) < newest.recordedAt {
                state.points[driver] = newest
                state.dirty.insert(driver)
            }
            return previous
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
    /// `nil` when the order has no dropoff (its customer's account was deleted).
    func remainingRoute(of order: Order, pickup: Coordinate) async throws -> Route? {
        guard let dropoff = order.dropoff?.coordinate else { return nil }
        if let driver = order.driverId, OrderMachine.withDriver.contains(order.status), let position = try await latestPosition(of: driver) {
            return graph.deliveryRoute(from: position, status: order.status, pickup: pickup, dropoff: dropoff)
        }
        return graph.route(from: pickup, to: dropoff)
    }

    /// Writes the latest point of every driver who moved since the last flush, in one statement.
    func flush() async throws {
        let now = Date()
        let points = latest.withLock { state in
            for driver in state.points.keys where deletedUsers.contains(driver, now: now) {
                state.points[driver] = nil
                state.trips[driver] = nil
            }
            let points = state.dirty.compactMap { driver in state.points[driver].map { (driver, $0) } }
            state.dirty.removeAll()
            state.trips = state.trips.filter { !$0.value.pace.isStale(at: now) }
            return points
        }
        guard !points.isEmpty else { return }
        try await client.withServiceTransaction(logger: logger) { [logger] connection in
            try await connection.query(
                """
                INSERT INTO drivers (user_id, lat, lng, speed_mps, position_at)
                SELECT driver, lat, lng, nullif(speed, -1), at
                FROM unnest(\(points.map(\.0))::uuid[], \(points.map(\.1.coordinate.lat))::float8[], \(points.map(\.1.coordinate.lng))::float8[],
                            \(points.map { $0.1.speedMps ?? -1 })::float8[], \(points.map(\.1.recordedAt))::timestamptz[]) AS point(driver, lat, lng, speed, at)
                ON CONFLICT (user_id) DO UPDATE SET lat = excluded.lat, lng = excluded.lng,
                    speed_mps = excluded.speed_mps, position_at = excluded.position_at, updated_at = clock_timestamp()
                WHERE drivers.position_at IS NULL OR drivers.position_at < excluded.position_at
                """,
                logger: logger
            )
        }
    }
}
