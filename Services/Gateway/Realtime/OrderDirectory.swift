import Contracts
import Foundation
import ServiceKit
import Synchronization

/// Who takes part in each order, projected from `tracking.orders` (read from its start when the
/// gateway starts, then live), so that `orders:{id}` subscriptions are decided without calling
/// tracking. Holds at most `capacity` orders; the oldest go first (orders are short-lived).
final class OrderDirectory: Sendable {
    private let parties: Mutex<BoundedMap<String, OrderParties>>
    /// How long a lookup of an order not known yet waits for it (its first event may still be on
    /// its way, or the directory still reading the topic's history).
    private let lookupWait: Duration

    init(capacity: Int = 200_000, lookupWait: Duration = .seconds(2)) {
        parties = Mutex(BoundedMap(capacity: capacity))
        self.lookupWait = lookupWait
    }

    /// Records the parties of `order` (a driver is added when assigned).
    func record(order: String, parties: OrderParties) {
        _ = self.parties.withLock { $0.updateValue(parties, forKey: order) }
    }

    /// Whether `user` (with role `role`) may follow `order`: admins always; otherwise its
    /// customer, its driver and its restaurant's owner (the account a restaurant signs in with,
    /// `restaurantOwnerId`). An order the directory does not know is refused.
    func mayFollow(order: String, user: String, role: String?) async -> Bool {
        if role == UserRole.admin.rawValue { return true }
        let deadline = ContinuousClock.now + lookupWait
        while true {
            if let parties = parties.withLock({ $0[order] }) {
                return parties.people.contains { $0.lowercased == user }
            }
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
