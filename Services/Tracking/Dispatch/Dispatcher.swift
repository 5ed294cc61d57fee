import Contracts
import Database
import Foundation
import Logging
import PostgresNIO
import RoadNetwork
import ServiceKit

/// Gives each order ready for pickup, oldest first, to the on-shift driver with no active order
/// whose road time to the restaurant is shortest. Safe with several replicas: an order being
/// dispatched and the drivers being weighed are locked (`SKIP LOCKED`: another replica takes
/// other orders and other drivers), and the unique index on a driver's active order refuses a
/// second one outright.
struct Dispatcher: Sendable {
    let client: PostgresClient
    let orders: OrderStore
    let graph: RoadGraph
    let logger: Logger

    enum Outcome: Equatable {
        case assigned(order: UUID, driver: UUID)
        case noDriver
        case nothingWaiting
    }

    /// Assigns until no order waits or no driver is free; returns how many it assigned.
    @discardableResult
    func round() async throws -> Int {
        var assigned = 0
        while case .assigned = try await dispatchOne() {
            assigned += 1
        }
        return assigned
    }

    func dispatchOne() async throws -> Outcome {
        try await client.withServiceTransaction(logger: logger) { [self] connection in
            guard let row = try await connection.query("""
                SELECT \(unescaped: Order.columns) FROM orders WHERE status = 'ready_for_pickup'
                ORDER BY updated_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
                """, logger: logger).collect().first else { return .nothingWaiting }
            let order = try Order(row: row)
            let pickup = try await connection.restaurantLocation(order.restaurantId, logger: logger)
            let active = OrderMachine.withDriver.map(\.rawValue)
            let free = try await connection.query("""
                SELECT d.user_id, d.lat, d.lng FROM drivers d
                WHERE d.on_shift AND d.lat IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.driver_id = d.user_id AND o.status = ANY(\(active)))
                FOR UPDATE OF d SKIP LOCKED
                """, logger: logger)
            var best: (driver: UUID, seconds: Double)?
            for try await (driver, lat, lng) in free.decode((UUID, Double, Double).self) {
                let seconds = graph.route(from: Coordinate(lat: lat, lng: lng), to: pickup).seconds
                if seconds < best?.seconds ?? .infinity { best = (driver, seconds) }
            }
            guard let best else { return .noDriver }
            _ = try await orders.assign(order, to: best.driver, by: OrderActor(userId: nil, role: .dispatch), on: connection)
            logger.info("dispatched", metadata: ["order": "\(order.id.lowercased)", "driver": "\(best.driver.lowercased)", "toPickupSeconds": "\(Int(best.seconds))"])
            return .assigned(order: order.id, driver: best.driver)
        }
    }
}
