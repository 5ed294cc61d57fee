import Foundation
import Synchronization

/// The ids of the last `capacity` events a replica pushed, so that one Kafka delivers again (the
/// outbox relay publishes at least once: a delivery report lost to a broker or Postgres outage
/// publishes the row a second time, under the same id) reaches clients once.
///
/// Bounded: the oldest id is forgotten when a new one would exceed the capacity. Safe to call
/// from the feed's partition tasks at once.
final class RecentEventIDs: Sendable {
    private struct State {
        var members: Set<UUID> = []
        var order: [UUID] = []
        /// Where the next id overwrites the oldest, once `order` is full.
        var next = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        precondition(capacity > 0, "a window of no ids forgets everything")
        self.capacity = capacity
    }

    /// Records `id`; whether it was not among the recent ones already.
    func firstSighting(of id: UUID) -> Bool {
        state.withLock { state in
            guard state.members.insert(id).inserted else { return false }
            if state.order.count < capacity {
                state.order.append(id)
            } else {
                state.members.remove(state.order[state.next])
                state.order[state.next] = id
                state.next = (state.next + 1) % capacity
            }
            return true
        }
    }
}
