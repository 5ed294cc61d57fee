import Contracts
import Database
import EventBus
import Foundation
import KeySetClient
import Logging
import PostgresNIO
import ResourceAPI
import RoadNetwork
import ServiceAssembly
import ServiceKit

/// Orders: placing (priced from the menu, idempotent), reading and listing (with delta sync),
/// the moves of the state machine and edits, each change with its events in the same transaction.
struct OrderStore: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let graph: RoadGraph
    let logger: Logger

    static func notFound(_ id: UUID) -> Problem {
        Problem(status: .notFound, type: "order-not-found", title: "Order not found", detail: "You have no order with the id \(id.lowercased).")
    }

    // MARK: Placing

    struct Placement: Sendable {
        var restaurantId: UUID
        var items: [(menuItemId: String, quantity: Int)]
        var dropoff: Dropoff
        var notes: String
    }

    func place(_ placement: Placement, caller: Caller, key: IdempotencyKey) async throws -> IdempotencyKey.Outcome<Order> {
        try caller.require(.customer, .admin, to: "place orders")
        return try await client.withTransaction(settings: caller.settings, logger: logger) { [self] connection in
            if let existing = try await connection.query(
                """
                SELECT \(unescaped: Order.columns), request_hash FROM orders WHERE customer_id = \(caller.id) AND idempotency_key = \(key.key)
                """,
                logger: logger
            ).collect().first {
                return try Self.replay(existing, key: key)
            }
            // The menu as it is now: the order is priced from what the customer saw.
            let service = try await connection.query(
                """
                SELECT owner_id, is_open, menu::text, lat, lng, name, opening_hours::text FROM restaurants WHERE id = \(placement.restaurantId)
                """,
                logger: logger
            ).collect().first
            guard
                let (owner, isOpen, menuText, lat, lng, name, hoursText) = try service?.decode(
                    (UUID, Bool, String, Double, Double, String, String?).self
                )
            else {
                throw Problem.validation([FieldError(.body(pointer: "/restaurantId"), "restaurantId names no restaurant")])
            }
            let hours = try hoursText.map { try JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
            guard isOpen, OpeningHours.isOpen(hours, at: Date()) else {
                throw Problem(status: .conflict, type: "restaurant-closed", title: "Restaurant closed", detail: "\(name) does not take orders now.")
            }
            let menu = Dictionary(
                try JSONDecoder().decode([MenuItem].self, from: Data(menuText.utf8)).map { ($0.id, $0) },
                uniquingKeysWith: { first, _ in first }
            )
            var items: [OrderItem] = []
            var unknown: [FieldError] = []
            for (index, wanted) in placement.items.enumerated() {
                guard let item = menu[wanted.menuItemId] else {
                    unknown.append(
                        FieldError(.body(pointer: "/items/\(index)/menuItemId"), "\(wanted.menuItemId.prefix(40)) is not on \(name)'s menu")
                    )
                    continue
                }
                guard item.available else {
                    throw Problem(
                        status: .conflict,
                        type: "item-unavailable",
                        title: "Item unavailable",
                        detail: "\(item.name) (\(item.id)) is not available now."
                    )
                }
                items.append(OrderItem(menuItemId: item.id, name: item.name, quantity: wanted.quantity, unitPriceCents: item.priceCents))
            }
            if !unknown.isEmpty { throw Problem.validation(unknown) }
            let total = items.reduce(0) { $0 + $1.quantity * $1.unitPriceCents }
            let route = graph.route(from: Coordinate(lat: lat, lng: lng), to: placement.dropoff.coordinate)
            let id = UUID()
            let now = Date()
            let history = [Order.Change(status: .placed, at: now, by: caller.actor, reason: nil)]
            let eta = Int(route.seconds.rounded())
            let row = try await connection.query(
                """
                INSERT INTO orders (id, customer_id, restaurant_id, restaurant_owner_id, items, total_cents, dropoff_address, dropoff_lat, dropoff_lng,
                                    notes, status, status_history, eta_seconds, routing, idempotency_key, request_hash, restaurant_name)
                VALUES (\(id), \(caller.id), \(placement.restaurantId), \(owner), \(try JSONBody.text(items))::jsonb, \(total), \(placement.dropoff.address),
                        \(placement.dropoff.lat), \(placement.dropoff.lng), \(placement.notes), 'placed', \(try JSONBody.text(history))::jsonb, \(eta),
                        \(route.kind.rawValue), \(key.key), \(key.requestHash), \(name))
                RETURNING \(unescaped: Order.columns)
                """,
                logger: logger
            ).collect().first("the order placed")
            let order = try Order(row: row)
            var placed = OrderPlaced(
                orderId: id,
                parties: order.parties,
                items: items,
                totalCents: total,
                dropoff: placement.dropoff,
                etaSeconds: eta,
                placedAt: order.createdAt
            )
            placed.restaurantName = name
            try await outbox.append(placed, subject: placed.aggregateID, on: connection, logger: logger)
            try await outbox.append(placed.v1, subject: placed.aggregateID, on: connection, logger: logger)
            return .created(order)
        }
    }

    /// The order an earlier request with the same key made (its columns, then its request hash).
    private static func replay(_ row: PostgresRow, key: IdempotencyKey) throws -> IdempotencyKey.Outcome<Order> {
        guard try row.makeRandomAccess()[18].decode(String.self) == key.requestHash else { return .keyReused }
        return .replayed(try Order(row: row))
    }

    // MARK: Reading

    func order(_ id: UUID, caller: Caller) async throws -> Order {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            guard
                let row = try await connection.query("SELECT \(unescaped: Order.columns) FROM orders WHERE id = \(id)", logger: logger).collect()
                    .first
            else {
                throw Self.notFound(id)
            }
            let order = try Order(row: row)
            guard order.party(of: caller) != nil else { throw Self.notFound(id) }
            return order
        }
    }

    /// Where `order` is picked up: its restaurant.
    func pickup(of order: Order) async throws -> Coordinate {
        try await client.withServiceTransaction(logger: logger) { [logger] connection in
            try await connection.restaurantLocation(order.restaurantId, logger: logger)
        }
    }

    /// What a list asks for.
    struct ListQuery: Sendable {
        /// Whose orders: as customer, as restaurant owner, as driver; `nil` for an admin's all.
        var role: UserRole?
        var status: OrderStatus?
        /// `since`, the page and its first page's token (`DeltaSync`).
        var sync: SyncRequest
    }

    /// Records that `leaver` no longer sees `order` (a driver given another's, or unassigned): a
    /// tombstone their next sync hands them. The order's own change needs nothing: its row keeps
    /// the transaction that wrote it (`sync_xid`, a trigger), and no lock orders the writers.
    func forget(_ order: UUID, by leaver: UUID, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO order_tombstones (user_id, order_id) VALUES (\(leaver), \(order))
            ON CONFLICT (user_id, order_id) DO UPDATE SET sync_xid = pg_current_xact_id(), deleted_at = now()
            """,
            logger: logger
        )
    }

    /// A page of the caller's orders, newest first; with `since`, the orders changed after that
    /// answer and the ids of those the caller no longer sees (`DeltaSync`).
    func list(_ query: ListQuery, caller: Caller) async throws -> SyncPage<Order> {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [logger] connection in
            let request = query.sync
            let token = try await connection.syncToken(request.pinned, list: "orders", owner: caller.id.lowercased, logger: logger)
            var bindings = PostgresBindings()
            var conditions: [String] = []
            switch query.role {
            case .customer?:
                bindings.append(caller.id)
                conditions.append("customer_id = $\(bindings.count)")
            case .restaurant?:
                bindings.append(caller.id)
                conditions.append("restaurant_owner_id = $\(bindings.count)")
            case .driver?:
                bindings.append(caller.id)
                conditions.append("driver_id = $\(bindings.count)")
            case .admin?, nil:
                break
            }
            if let status = query.status {
                bindings.append(status.rawValue)
                conditions.append("status = $\(bindings.count)")
            }
            let order: String
            if let since = request.since {
                bindings.append(since.snapshot)
                conditions.append(DeltaSync.changedAfter("$\(bindings.count)::pg_snapshot"))
                if let (xid, id) = try request.syncPositionByID() {
                    // A page of changes ends at a writer's transaction and an order.
                    bindings.append(xid)
                    bindings.append(id)
                    conditions.append("(sync_xid, id) > ($\(bindings.count - 1)::xid8, $\(bindings.count))")
                }
                order = "sync_xid, id"
            } else {
                if let cursor = request.cursor {
                    guard let id = cursor.id else { throw Self.badCursor }
                    try bindings.append(ExactTimestamp(microseconds: cursor.microseconds))
                    bindings.append(id)
                    conditions.append("(created_at, id) < ($\(bindings.count - 1), $\(bindings.count))")
                }
                order = "created_at DESC, id DESC"
            }
            bindings.append(request.limit + 1)
            let sql = """
                SELECT \(Order.columns), sync_xid::text FROM orders
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
                ORDER BY \(order) LIMIT $\(bindings.count)
                """
            var rows: [(Order, String)] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger) {
                rows.append((try Order(row: row), try row.makeRandomAccess()[18].decode(String.self)))
            }
            let (items, next) = request.page(of: rows, token: token) { order, xid in
                request.since == nil
                    ? PageCursor(time: order.createdAt, id: order.id)
                    : SyncRequest.position(xid: xid, key: order.id.lowercased)
            }
            var deleted: [String] = []
            if let since = request.since, request.cursor == nil {
                let rows = try await connection.query(
                    """
                    SELECT order_id FROM order_tombstones
                    WHERE user_id = \(caller.id)
                      AND \(changedAfter: since)
                    """,
                    logger: logger
                )
                for try await id in rows.decode(UUID.self) { deleted.append(id.lowercased) }
            }
            return SyncPage(items: items.map(\.0), deleted: deleted, nextCursor: next, syncToken: token)
        }
    }

    // MARK: Changing

    /// One move of the state machine by `caller`, at the version they read. `driver`: whom an
    /// admin assigns (`driver_assigned`).
    func move(_ id: UUID, to status: OrderStatus, reason: String?, driver: UUID?, expecting version: Int?, caller: Caller) async throws -> Order {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [self] connection in
            let order = try await lockedOrder(id, caller: caller, on: connection)
            guard let party = order.party(of: caller) else { throw Self.notFound(id) }
            guard version == nil || order.version == version else { throw Problem.stale(current: order.version) }
            guard OrderMachine.allows(party, from: order.status, to: status) else { throw Self.invalidTransition(from: order.status, to: status) }
            if status == .driverAssigned {
                guard let driver else {
                    throw Problem.validation([FieldError(.body(pointer: "/driverId"), "driverId: the driver to assign")])
                }
                return try await assign(order, to: driver, by: caller.actor, on: connection)
            }
            // A driver who gives the order back, or whom an admin takes it from, no longer sees it.
            let unassigns = status == .readyForPickup && OrderMachine.withDriver.contains(order.status)
            return try await apply(order, to: status, by: caller.actor, reason: reason, driver: unassigns ? .some(nil) : nil, on: connection).order
        }
    }

    /// Gives `order` to `driver` (who has no other order: the unique index refuses a second, unless
    /// it is this one, reserved for them), with its events: the move, and the assignment with the
    /// driver's road time through the restaurant to the dropoff when their position is known.
    func assign(_ order: Order, to driver: UUID, by actor: OrderActor, on connection: PostgresConnection) async throws -> Order {
        let eta = try await etaOfAssignment(order, to: driver, on: connection)
        let (updated, restaurantName) = try await refusingABusyDriver {
            try await apply(order, to: .driverAssigned, by: actor, reason: nil, driver: .some(driver), eta: eta, on: connection)
        }
        // A driver reserved early was announced then; the move itself says their legs begin.
        if order.driverId != driver { try await announceAssignment(of: updated, restaurantName: restaurantName, eta: eta, on: connection) }
        return updated
    }

    /// Reserves `driver` for `order` while its kitchen still prepares it (early dispatch): the
    /// order keeps its status and gets its driver, who sees it and is given no other, with the
    /// assignment's events; once it is ready, `assign` begins their legs.
    func reserve(_ order: Order, for driver: UUID, on connection: PostgresConnection) async throws -> Order {
        let eta = try await etaOfAssignment(order, to: driver, on: connection)
        let (updated, restaurantName) = try await refusingABusyDriver {
            let row = try await connection.query(
                """
                UPDATE orders SET driver_id = \(driver), eta_seconds = coalesce(\(eta), eta_seconds), version = version + 1, updated_at = clock_timestamp()
                WHERE id = \(order.id) RETURNING \(unescaped: Order.columnsWithRestaurantName)
                """,
                logger: logger
            ).collect().first("the order changed")
            return try Order.withRestaurantName(row)
        }
        try await announceAssignment(of: updated, restaurantName: restaurantName, eta: eta, on: connection)
        return updated
    }

    /// The road time from where `driver` is through the restaurant to the dropoff; nil while
    /// their position is unknown.
    private func etaOfAssignment(_ order: Order, to driver: UUID, on connection: PostgresConnection) async throws -> Int? {
        let position = try await connection.query("SELECT lat, lng FROM drivers WHERE user_id = \(driver) AND lat IS NOT NULL", logger: logger)
            .collect().first?.decode((Double, Double).self)
        guard let (lat, lng) = position, let dropoff = order.dropoff else { return nil }
        let pickup = try await connection.restaurantLocation(order.restaurantId, logger: logger)
        return Int(
            graph.deliveryRoute(from: Coordinate(lat: lat, lng: lng), status: .driverAssigned, pickup: pickup, dropoff: dropoff.coordinate)
                .seconds.rounded()
        )
    }

    private func refusingABusyDriver<Written>(_ write: () async throws -> Written) async throws -> Written {
        do {
            return try await write()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw Problem(status: .conflict, type: "driver-busy", title: "Driver busy", detail: "That driver is on another order.")
        }
    }

    private func announceAssignment(of order: Order, restaurantName: String?, eta: Int?, on connection: PostgresConnection) async throws {
        var assigned = DriverAssigned(orderId: order.id, parties: order.parties, etaSeconds: eta, assignedAt: order.updatedAt)
        assigned.restaurantName = restaurantName
        assigned.itemCount = order.itemCount
        try await outbox.append(assigned, subject: assigned.aggregateID, on: connection, logger: logger)
        try await outbox.append(assigned.v1, subject: assigned.aggregateID, on: connection, logger: logger)
    }

    /// Changes the notes or the dropoff of an order still `placed`: its customer or an admin.
    func edit(_ id: UUID, notes: String?, dropoff: Dropoff?, expecting version: Int?, caller: Caller) async throws -> Order {
        try await client.withTransaction(settings: caller.settings, logger: logger) { [self] connection in
            let order = try await lockedOrder(id, caller: caller, on: connection)
            guard let party = order.party(of: caller) else { throw Self.notFound(id) }
            guard party == .customer || party == .admin else {
                throw Problem(
                    status: .forbidden,
                    type: "forbidden-role",
                    title: "Not allowed for this role",
                    detail: "Only the order's customer or an admin may edit it."
                )
            }
            guard version == nil || order.version == version else { throw Problem.stale(current: order.version) }
            guard order.status == .placed else {
                throw Problem(
                    status: .conflict,
                    type: "order-not-editable",
                    title: "Order no longer editable",
                    detail: "Notes and dropoff change only while the order is placed; it is \(order.status.rawValue)."
                )
            }
            let row = try await connection.query(
                """
                UPDATE orders SET notes = coalesce(\(notes), notes), dropoff_address = coalesce(\(dropoff?.address), dropoff_address),
                    dropoff_lat = coalesce(\(dropoff?.lat), dropoff_lat), dropoff_lng = coalesce(\(dropoff?.lng), dropoff_lng),
                    version = version + 1, updated_at = clock_timestamp()
                WHERE id = \(id) RETURNING \(unescaped: Order.columns)
                """,
                logger: logger
            ).collect().first("the order edited")
            return try Order(row: row)
        }
    }

    private func lockedOrder(_ id: UUID, caller: Caller, on connection: PostgresConnection) async throws -> Order {
        guard
            let row = try await connection.query("SELECT \(unescaped: Order.columns) FROM orders WHERE id = \(id) FOR UPDATE", logger: logger)
                .collect().first
        else {
            throw Self.notFound(id)
        }
        return try Order(row: row)
    }

    /// Writes the move: the row, its history entry and its events (v2, and the v1 twin when the
    /// move means something in v1). `driver`: `.some(nil)` unassigns, `.some(id)` assigns.
    func apply(
        _ order: Order,
        to status: OrderStatus,
        by actor: OrderActor,
        reason: String?,
        driver: UUID??,
        eta: Int? = nil,
        on connection: PostgresConnection
    ) async throws -> (order: Order, restaurantName: String?) {
        let now = Date()
        let entry = Order.Change(status: status, at: now, by: actor, reason: reason)
        let newDriver: UUID? = driver ?? order.driverId
        if let gone = order.driverId, newDriver != gone {
            // The driver leaves the order, and with it its rows' policy: the checks above decided,
            // the rest of this transaction acts for the service.
            try await connection.query("SELECT set_config('app.service', 'on', true)", logger: logger)
        }
        let row = try await connection.query(
            """
            UPDATE orders SET status = \(status.rawValue), status_history = status_history || \(try JSONBody.text([entry]))::jsonb,
                driver_id = \(newDriver), eta_seconds = coalesce(\(eta), eta_seconds),
                version = version + 1, updated_at = clock_timestamp()
            WHERE id = \(order.id) RETURNING \(unescaped: Order.columnsWithRestaurantName)
            """,
            logger: logger
        ).collect().first("the order moved")
        let (updated, restaurantName) = try Order.withRestaurantName(row)
        let leaver = order.driverId.flatMap { $0 == newDriver ? nil : $0 }
        var changed = OrderStatusChanged(
            orderId: order.id,
            parties: updated.parties,
            status: status,
            previousStatus: order.status,
            by: actor,
            reason: reason,
            version: updated.version,
            changedAt: now
        )
        changed.restaurantName = restaurantName
        changed.itemCount = updated.itemCount
        try await outbox.append(changed, subject: changed.aggregateID, on: connection, logger: logger)
        if let twin = changed.v1(after: order.lastV1Status) {
            try await outbox.append(twin, subject: changed.aggregateID, on: connection, logger: logger)
        }
        if let leaver { try await forget(order.id, by: leaver, on: connection) }
        return (updated, restaurantName)
    }

    static let badCursor = Problem.validation([FieldError(.parameter("cursor"), "cursor: pass back the nextCursor of the same list")])

    static func invalidTransition(from: OrderStatus, to: OrderStatus) -> Problem {
        Problem(
            status: .conflict,
            type: "invalid-transition",
            title: "Invalid transition",
            detail: "The order is \(from.rawValue); it cannot move to \(to.rawValue) by your hand.",
            extensions: ["currentStatus": from.rawValue, "requestedStatus": to.rawValue]
        )
    }
}
