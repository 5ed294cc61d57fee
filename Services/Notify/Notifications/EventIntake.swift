import AsyncSignals
import Contracts
import Database
import EventBus
import Logging
import PostgresNIO

/// What notify does with each event it consumes, inside the inbox's transaction (done for the
/// service, and so a redelivered event has its effect once): the projections first, then who is told what, then the deliveries
/// that carry it — and once the transaction has committed, the sender is woken.
struct EventIntake: Sendable {
    let projections: Projections
    let queue: DeliveryQueue
    let likes: LikeWindows
    /// `nil` when receipts cannot be addressed (no service token for auth).
    let receipts: Receipts?
    let erasure: UserErasure
    let wakeup: Wakeup
    let logger: Logger

    func apply(_ received: ReceivedEvent, on connection: PostgresConnection) async throws {
        if let deleted = received.event as? UserDeleted {
            try await erasure.erase(deleted, on: connection)
            return
        }
        try await projections.apply(received.event, on: connection)
        let occasion = Occasion(received.envelope)
        let due: Int
        if let receipts, let changed = received.event as? OrderStatusChanged {
            try await receipts.queue(for: changed, occasion: occasion, on: connection)
        }
        if let liked = received.event as? PhotoLiked {
            due = try await likes.record(liked, occasion: occasion, on: connection)
        } else {
            let facts = try await projections.facts(for: received.event, on: connection)
            // No one whose account is gone is told anything (an order of theirs cancelled by
            // their erasure, say).
            let notifications = NotificationPlanner.notifications(for: received.event, facts: facts).filter {
                !erasure.deletedUsers.contains($0.recipient)
            }
            due =
                notifications.isEmpty ? 0 : try await queue.enqueue(notifications, about: occasion, on: connection)
        }
        if due > 0 { CommitHooks.current?.afterCommit { [wakeup] in wakeup.signal() } }
    }
}
