import Contracts
import EventBus
import Foundation
import Logging
import PostgresNIO

/// What tracking removes of a deleted user (`auth.user.deleted.v1`), in the inbox's transaction,
/// then `tracking.user.erased.v1` says how much:
///
/// - as a customer: an order still under way is cancelled (there is no one to deliver to), and
///   every order they placed stays in the restaurant's books — lines and totals — without them:
///   `customer_id` null, no dropoff, no notes (`orders`, `cancelled`);
/// - as a driver: an order they hold goes back to `ready_for_pickup`, as if they gave it back, and
///   one reserved for them loses its reservation, for the dispatcher to give to another
///   (`released`); finished orders forget them (`deliveries`); their latest position and shift go
///   (`positions`);
/// - anyone (an admin too): their name on any order's history becomes no one's, and their sync
///   tombstones go (`tombstones`).
///
/// Every order changed is numbered as a change, so the other parties' delta sync sees it.
struct UserErasure: Sendable {
    /// The customer an erased order's events would name: no one (they are never published, the
    /// order having ended).
    static let nobody = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    /// The consumer's name in the inbox.
    static let consumer = "tracking-erasure"

    let orders: OrderStore
    let outbox: Outbox
    let logger: Logger

    func erase(_ deleted: UserDeleted, on connection: PostgresConnection) async throws {
        let user = deleted.userId
        var counts = ["orders": 0, "cancelled": 0, "released": 0, "deliveries": 0, "positions": 0, "tombstones": 0]

        let active = try await connection.query(
            """
            SELECT \(unescaped: Order.columns) FROM orders
            WHERE (customer_id = \(user) OR driver_id = \(user)) AND status NOT IN ('delivered', 'rejected', 'cancelled')
            ORDER BY id FOR UPDATE
            """,
            logger: logger
        ).collect().map { try Order(row: $0) }
        for order in active {
            if order.customerId == user {
                let reason = "The customer's account was deleted."
                _ = try await orders.apply(
                    order,
                    to: .cancelled,
                    by: OrderActor(userId: nil, role: .customer),
                    reason: reason,
                    driver: nil,
                    on: connection
                )
                counts["cancelled", default: 0] += 1
            } else if OrderMachine.withDriver.contains(order.status) {
                let reason = "The driver's account was deleted."
                let actor = OrderActor(userId: nil, role: .driver)
                _ = try await orders.apply(order, to: .readyForPickup, by: actor, reason: reason, driver: .some(nil), on: connection)
                counts["released", default: 0] += 1
            } else {
                // Reserved while the kitchen works: the dispatcher's next round reserves another.
                try await connection.query(
                    "UPDATE orders SET driver_id = NULL, version = version + 1, updated_at = clock_timestamp() WHERE id = \(order.id)",
                    logger: logger
                )
                counts["released", default: 0] += 1
            }
        }

        let forgotten = try await connection.query(
            """
            WITH customer AS (
                UPDATE orders SET customer_id = NULL, dropoff_address = '', dropoff_lat = NULL, dropoff_lng = NULL, notes = '',
                    idempotency_key = id::text, request_hash = '', version = version + 1, updated_at = clock_timestamp()
                WHERE customer_id = \(user) RETURNING id, 'orders' AS what
            ), driver AS (
                UPDATE orders SET driver_id = NULL, version = version + 1, updated_at = clock_timestamp()
                WHERE driver_id = \(user) RETURNING id, 'deliveries' AS what
            )
            SELECT id, what FROM customer UNION ALL SELECT id, what FROM driver
            """,
            logger: logger
        ).collect().map { try $0.decode((UUID, String).self) }
        for (_, what) in forgotten { counts[what, default: 0] += 1 }
        // Their name in histories (placing, moving, an admin's hand), on any order.
        // Each changed order's row keeps this transaction (sync_xid): its parties' next sync has it.
        try await connection.query(
            """
            UPDATE orders SET status_history = (
                SELECT jsonb_agg(CASE WHEN lower(entry #>> '{by,userId}') = \(user.lowercased)
                                      THEN jsonb_set(entry, '{by,userId}', 'null') ELSE entry END ORDER BY position)
                FROM jsonb_array_elements(status_history) WITH ORDINALITY AS history(entry, position)
            ), version = version + 1, updated_at = clock_timestamp()
            WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(status_history) AS history(entry) WHERE lower(entry #>> '{by,userId}') = \(user.lowercased))
            """,
            logger: logger
        )
        let removed = try await connection.query(
            """
            WITH positions AS (
                DELETE FROM drivers WHERE user_id = \(user) RETURNING 1
            ), tombstones AS (
                DELETE FROM order_tombstones WHERE user_id = \(user) RETURNING 1
            )
            SELECT (SELECT count(*) FROM positions), (SELECT count(*) FROM tombstones)
            """,
            logger: logger
        ).collect()[0].decode((Int, Int).self)
        counts["positions"] = removed.0
        counts["tombstones"] = removed.1

        let erased = TrackingUserErased(userId: user, erasedAt: Date(), counts: counts)
        try await outbox.append(erased, subject: erased.aggregateID, on: connection, logger: logger)
        logger.info("Erased a deleted user", metadata: ["user": "\(user)", "counts": "\(counts)"])
    }
}
