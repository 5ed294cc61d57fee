import Contracts
import Foundation
import Synchronization

/// Who takes part in each order, projected from `tracking.orders` (read from its start when the
/// gateway starts, then live), so that `orders:{id}` subscriptions are decided without calling
/// tracking. Holds at most `capacity` orders; the oldest go first (orders are short-lived).
final class OrderDirectory: Sendable {
    private struct State {
        var parties: [String: OrderParties] = [:]
        /// Orders in the order they were first seen; `head` is the oldest still held.
        var arrivals: [String] = []
        var head = 0
    }

    private let state = Mutex(State())
    private let capacity: Int
    /// How long a lookup of an order not known yet waits for it (its first event may still be on
    /// its way, or the directory still reading the topic's history).
    private let lookupWait: Duration

    init(capacity: Int = 200_000, lookupWait: Duration = .seconds(2)) {
        self.capacity = capacity
        self.lookupWait = lookupWait
    }

    /// Records the parties of `order` (a driver is added when assigned).
    func record(order: String, parties: OrderParties) {
        state.withLock { state in
            if state.parties.updateValue(parties, forKey: order) == nil {
                state.arrivals.append(order)
            }
            while state.parties.count > capacity {
                state.parties[state.arrivals[state.head]] = nil
                state.head += 1
            }
            if state.head > capacity {
                state.arrivals.removeFirst(state.head)
                state.head = 0
            }
        }
    }

    /// Whether `user` (with role `role`) may follow `order`: admins always; otherwise its
    /// customer, its driver and its restaurant's owner (the account a restaurant signs in with,
    /// `restaurantOwnerId`). An order the directory does not know is refused.
    func mayFollow(order: String, user: String, role: String?) async -> Bool {
        if role == UserRole.admin.rawValue { return true }
        let deadline = ContinuousClock.now + lookupWait
        while true {
            if let parties = state.withLock({ $0.parties[order] }) {
                return parties.people.contains { $0.uuidString.lowercased() == user }
            }
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
