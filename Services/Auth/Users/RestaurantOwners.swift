import Contracts
import EventBus
import Logging
import PostgresNIO

/// Who owns which restaurant (`restaurant_owners`), from `tracking.restaurants` through the inbox:
/// an account that owns one is not deleted (`AccountDeletion`). A handover is a change naming a
/// new owner; an older version read again changes nothing.
struct RestaurantOwners: Sendable {
    static let registry = EventRegistry([RestaurantChanged.self])

    let logger: Logger

    /// Applies one event on `connection`, inside the inbox's transaction.
    func apply(_ event: any DomainEvent, on connection: PostgresConnection) async throws {
        guard let changed = event as? RestaurantChanged else { return }
        try await connection.query(
            """
            INSERT INTO restaurant_owners (restaurant_id, owner_id, version) VALUES (\(changed.restaurantId), \(changed.ownerId), \(changed.version))
            ON CONFLICT (restaurant_id) DO UPDATE SET owner_id = excluded.owner_id, version = excluded.version
            WHERE restaurant_owners.version < excluded.version
            """,
            logger: logger
        )
    }
}
