import Contracts
import Foundation
import Logging
import PostgresNIO
import RoadNetwork
import Synchronization

/// The order each driver is on while its parties may see the car, looked up for every batch of
/// positions — in one query for all the drivers whose batches are waiting, not one each: at
/// tens of thousands of positions a second the round trips, not the rows, were the cost.
///
/// A lookup always reads the database after it was asked for (a query already running when it
/// arrives does not answer it), so a batch never carries an order its driver had left before the
/// batch came in — the same promise as one query per batch. At most `parallel` queries run at once;
/// while they do, lookups gather for the next.
final class ActiveOrderLookup: Sendable {
    /// The order a driver is on, with what its ETA needs.
    struct ActiveOrder: Sendable, Equatable {
        var id: UUID
        var status: OrderStatus
        var pickup: Coordinate
        var dropoff: Coordinate
    }

    private typealias Waiter = CheckedContinuation<ActiveOrder?, any Error>

    private struct State {
        var waiting: [UUID: [Waiter]] = [:]
        var running = 0
    }

    private let state = Mutex(State())
    private let client: PostgresClient
    private let parallel: Int
    private let logger: Logger

    /// - Parameter client: sessions acting for the service (every order is read).
    init(client: PostgresClient, parallel: Int = 2, logger: Logger) {
        self.client = client
        self.parallel = parallel
        self.logger = logger
    }

    /// The order `driver` is on while its parties may see the car; nil for none.
    /// - Throws: the database's error.
    func order(of driver: UUID) async throws -> ActiveOrder? {
        try await withCheckedThrowingContinuation { (waiter: Waiter) in
            let starts = state.withLock { state in
                state.waiting[driver, default: []].append(waiter)
                guard state.running < parallel else { return false }
                state.running += 1
                return true
            }
            if starts { Task { await self.answerWaiting() } }
        }
    }

    /// Answers what is waiting, a query at a time, until nothing is.
    private func answerWaiting() async {
        while let batch = state.withLock({ state -> [UUID: [Waiter]]? in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            defer { state.waiting = [:] }
            return state.waiting
        }) {
            do {
                let found = try await orders(of: Array(batch.keys))
                for (driver, waiters) in batch {
                    for waiter in waiters { waiter.resume(returning: found[driver]) }
                }
            } catch {
                for waiter in batch.values.joined() { waiter.resume(throwing: error) }
            }
        }
    }

    private func orders(of drivers: [UUID]) async throws -> [UUID: ActiveOrder] {
        let statuses = OrderMachine.withDriver.map(\.rawValue)
        let rows = try await client.query(
            """
            SELECT o.driver_id, o.id, o.status, r.lat, r.lng, o.dropoff_lat, o.dropoff_lng FROM orders o JOIN restaurants r ON r.id = o.restaurant_id
            WHERE o.driver_id = ANY(\(drivers)) AND o.status = ANY(\(statuses))
            """,
            logger: logger
        )
        var found: [UUID: ActiveOrder] = [:]
        for try await (driver, id, status, lat, lng, dropoffLat, dropoffLng) in rows.decode((UUID, UUID, String, Double, Double, Double, Double).self)
        {
            guard let status = OrderStatus(rawValue: status) else { continue }
            found[driver] = ActiveOrder(
                id: id,
                status: status,
                pickup: Coordinate(lat: lat, lng: lng),
                dropoff: Coordinate(lat: dropoffLat, lng: dropoffLng)
            )
        }
        return found
    }
}
