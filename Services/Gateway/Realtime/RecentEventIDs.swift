import Foundation
import Synchronization

/// The ids of the last `capacity` events a replica pushed, so that one Kafka delivers again (the
/// outbox relay publishes at least once: a delivery report lost to a broker or Postgres outage
/// publishes the row a second time, under the same id) reaches clients once. The oldest id is
/// forgotten first. Safe to call from the feed's partition tasks at once.
final class RecentEventIDs: Sendable {
    private let seen: Mutex<BoundedMap<UUID, Void>>

    init(capacity: Int) {
        seen = Mutex(BoundedMap(capacity: capacity))
    }

    /// Records `id`; whether it was not among the recent ones already.
    func firstSighting(of id: UUID) -> Bool {
        seen.withLock { $0.updateValue((), forKey: id) }
    }
}
