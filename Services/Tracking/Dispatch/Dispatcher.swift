import Contracts
import Database
import Foundation
import KeySetClient
import Logging
import PostgresNIO
import RoadNetwork
import ServiceKit

/// Gives each order waiting for a driver, ready ones first and then the oldest, to the on-shift
/// driver with no order whose road time to the restaurant is shortest. Safe with several
/// replicas: an order being dispatched and the drivers being weighed are locked (`SKIP LOCKED`:
/// another replica takes other orders and other drivers), and the unique index on a driver's
/// order refuses a second one outright.
///
/// An order waits once it is `ready_for_pickup`; with `early` (`TRACKING_DISPATCH_EARLY`) already
/// once it is `accepted`. An order still in the kitchen gets its driver reserved (the driver sees
/// it and heads for the restaurant, and is given nothing else) and keeps its status; the moment
/// it is ready, its reserved driver's legs begin (`driver_assigned`).
struct Dispatcher: Sendable {
    let client: PostgresClient
    let orders: OrderStore
    let graph: RoadGraph
    let early: Bool
    let logger: Logger

    enum Outcome: Equatable {
        case assigned(order: UUID, driver: UUID)
        /// A driver reserved for an order still in the kitchen (early dispatch).
        case reserved(order: UUID, driver: UUID)
        case noDriver
        case nothingWaiting
    }

    /// The statuses in which an order without a driver waits for one.
    var waiting: [String] {
        (early ? [OrderStatus.accepted, .preparing, .readyForPickup] : [.readyForPickup]).map(\.rawValue)
    }

    /// Assigns until no order waits or no driver is free; returns how many orders it gave a driver.
    @discardableResult
    func round() async throws -> Int {
        var given = 0
        while true {
            switch try await dispatchOne() {
            case .assigned, .reserved: given += 1
            case .noDriver, .nothingWaiting: return given
            }
        }
    }

    func dispatchOne() async throws -> Outcome {
        try await client.withServiceTransaction(logger: logger) { [self] connection in
            if early,
                let row = try await connection.query(
                    """
                    SELECT \(unescaped: Order.columns) FROM orders WHERE status = 'ready_for_pickup' AND driver_id IS NOT NULL
                    ORDER BY updated_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
                    """,
                    logger: logger
                ).collect().first
            {
                // Ready, with its driver reserved while it cooked: their legs begin.
                let order = try Order(row: row)
                guard let driver = order.driverId else { throw MissingRow(what: "the driver reserved for order \(order.id.lowercased)") }
                _ = try await orders.assign(order, to: driver, by: OrderActor(userId: nil, role: .dispatch), on: connection)
                logger.info("dispatched", metadata: ["order": "\(order.id.lowercased)", "driver": "\(driver.lowercased)", "reserved": "true"])
                return .assigned(order: order.id, driver: driver)
            }
            guard
                let row = try await connection.query(
                    """
                    SELECT \(unescaped: Order.columns) FROM orders WHERE driver_id IS NULL AND status = ANY(\(waiting))
                    ORDER BY status <> 'ready_for_pickup', updated_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
                    """,
                    logger: logger
                ).collect().first
            else { return .nothingWaiting }
            let order = try Order(row: row)
            let pickup = try await connection.restaurantLocation(order.restaurantId, logger: logger)
            let ended = OrderMachine.terminal.map(\.rawValue)
            let free = try await connection.query(
                """
                SELECT d.user_id, d.lat, d.lng FROM drivers d
                WHERE d.on_shift AND d.lat IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.driver_id = d.user_id AND o.status <> ALL(\(ended)))
                FOR UPDATE OF d SKIP LOCKED
                """,
                logger: logger
            )
            var best: (driver: UUID, seconds: Double)?
            for try await (driver, lat, lng) in free.decode((UUID, Double, Double).self) {
                let seconds = graph.route(from: Coordinate(lat: lat, lng: lng), to: pickup).seconds
                if seconds < best?.seconds ?? .infinity { best = (driver, seconds) }
            }
            guard let best else { return .noDriver }
            let dispatch = OrderActor(userId: nil, role: .dispatch)
            let metadata: Logger.Metadata = [
                "order": "\(order.id.lowercased)", "driver": "\(best.driver.lowercased)", "toPickupSeconds": "\(Int(best.seconds))",
            ]
            if order.status == .readyForPickup {
                _ = try await orders.assign(order, to: best.driver, by: dispatch, on: connection)
                logger.info("dispatched", metadata: metadata)
                return .assigned(order: order.id, driver: best.driver)
            }
            _ = try await orders.reserve(order, for: best.driver, on: connection)
            logger.info("reserved a driver", metadata: metadata)
            return .reserved(order: order.id, driver: best.driver)
        }
    }
}
