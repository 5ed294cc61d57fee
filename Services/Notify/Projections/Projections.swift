import Contracts
import EventBus
import Foundation
import Logging
import PostgresNIO

/// What notify keeps of other services' events to word and address a notification, each written
/// in the inbox's transaction of the event that tells it: restaurants' names and owners from
/// `tracking.restaurants`, each order's item count from its placing on `tracking.orders`, people's
/// usernames from `auth.users`, and posts' authors from `social.activity`.
struct Projections: Sendable {
    let logger: Logger

    /// Records what `event` tells, if anything.
    func apply(_ event: any DomainEvent, on connection: PostgresConnection) async throws {
        switch event {
        case let changed as RestaurantChanged:
            try await connection.query(
                """
                INSERT INTO restaurants (restaurant_id, owner_id, name, version)
                VALUES (\(changed.restaurantId), \(changed.ownerId), \(changed.name), \(changed.version))
                ON CONFLICT (restaurant_id) DO UPDATE SET owner_id = excluded.owner_id, name = excluded.name, version = excluded.version
                WHERE restaurants.version <= excluded.version
                """,
                logger: logger
            )
        case let registered as UserRegistered:
            try await person(registered.userId, username: registered.username, at: registered.registeredAt, on: connection)
        case let updated as ProfileUpdated:
            try await person(updated.userId, username: updated.username, at: updated.updatedAt, on: connection)
        case let created as PostCreated:
            try await connection.query(
                "INSERT INTO posts (post_id, author_id) VALUES (\(created.postId), \(created.userId)) ON CONFLICT DO NOTHING",
                logger: logger
            )
        case let deleted as PostDeleted:
            // The post's row first, then its window: the order a like takes them in.
            try await connection.query(
                """
                INSERT INTO posts (post_id, author_id, deleted) VALUES (\(deleted.postId), \(deleted.userId), true)
                ON CONFLICT (post_id) DO UPDATE SET deleted = true
                """,
                logger: logger
            )
            try await connection.query("DELETE FROM like_windows WHERE post_id = \(deleted.postId)", logger: logger)
        case let placed as OrderPlaced:
            try await connection.query(
                """
                INSERT INTO orders (order_id, restaurant_id, item_count, placed_at, items, total_cents)
                VALUES (\(placed.orderId), \(placed.parties.restaurantId), \(placed.items.itemCount), \(placed.placedAt),
                        \(String(decoding: try EventJSON.encoder.encode(placed.items), as: UTF8.self))::jsonb, \(placed.totalCents))
                ON CONFLICT (order_id) DO NOTHING
                """,
                logger: logger
            )
        default:
            break
        }
    }

    /// Records a person's username, unless what is recorded is newer (a replay may bring an old
    /// event again).
    private func person(_ user: UUID, username: String?, at time: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO people (user_id, username, updated_at) VALUES (\(user), \(username), \(time))
            ON CONFLICT (user_id) DO UPDATE SET username = excluded.username, updated_at = excluded.updated_at
            WHERE people.updated_at <= excluded.updated_at
            """,
            logger: logger
        )
    }

    /// What `event` says of its order and restaurant (tracking's order events carry the
    /// restaurant's name and the item count), and what the projections add where it does not (an
    /// event published before tracking carried them).
    func facts(for event: any DomainEvent, on connection: PostgresConnection) async throws -> NotificationPlanner.Facts {
        let order: UUID
        let restaurant: UUID
        let told: NotificationPlanner.Facts
        switch event {
        case let placed as OrderPlaced:
            (order, restaurant) = (placed.orderId, placed.parties.restaurantId)
            told = NotificationPlanner.Facts(restaurantName: placed.restaurantName, itemCount: placed.items.itemCount)
        case let assigned as DriverAssigned:
            (order, restaurant) = (assigned.orderId, assigned.parties.restaurantId)
            told = NotificationPlanner.Facts(restaurantName: assigned.restaurantName, itemCount: assigned.itemCount)
        case let changed as OrderStatusChanged:
            (order, restaurant) = (changed.orderId, changed.parties.restaurantId)
            told = NotificationPlanner.Facts(restaurantName: changed.restaurantName, itemCount: changed.itemCount)
        case let arriving as OrderArriving:
            return NotificationPlanner.Facts(restaurantName: arriving.restaurantName)
        default: return NotificationPlanner.Facts()
        }
        if told.restaurantName != nil, told.itemCount != nil { return told }
        let rows = try await connection.query(
            """
            SELECT (SELECT name FROM restaurants WHERE restaurant_id = \(restaurant)),
                   (SELECT item_count FROM orders WHERE order_id = \(order))
            """,
            logger: logger
        )
        for try await (name, count) in rows.decode((String?, Int?).self) {
            return NotificationPlanner.Facts(restaurantName: told.restaurantName ?? name, itemCount: told.itemCount ?? count)
        }
        return told
    }
}
