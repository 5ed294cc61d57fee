import Foundation
import Synchronization

/// The users whose accounts were deleted lately (`auth.user.deleted.v1`): their access tokens stay
/// valid by signature until they expire, so every verifier of this process refuses them by their
/// `sub` for one access-token lifetime after the deletion (`KeySetCache` asks here). Entries older
/// than that are dropped: no token issued before the deletion is still current by then, and a
/// deleted account's id is never issued again.
package final class DeletedUsers: Sendable {
    /// How long a deletion is remembered: auth's longest access-token lifetime, as the spec has it.
    package static let window: Duration = .seconds(3_600)
    /// A bound on what is kept, should a flood of deletions come (far beyond any real hour).
    private static let capacity = 1_000_000

    private let deleted = Mutex<[UUID: Date]>([:])
    private let window: Duration

    package init(window: Duration = DeletedUsers.window) {
        self.window = window
    }

    /// Records that `user` was deleted at `time`; a deletion older than the window is ignored.
    package func record(_ user: UUID, deletedAt time: Date, now: Date = Date()) {
        let horizon = self.horizon(now)
        guard time > horizon else { return }
        deleted.withLock { deleted in
            if deleted.count >= Self.capacity { deleted = deleted.filter { $0.value > horizon } }
            if deleted.count < Self.capacity { deleted[user] = time }
        }
    }

    /// Whether `user` was deleted within the window.
    package func contains(_ user: UUID, now: Date = Date()) -> Bool {
        deletedAt(user, now: now) != nil
    }

    /// When `user` was deleted, if within the window.
    package func deletedAt(_ user: UUID, now: Date = Date()) -> Date? {
        guard let time = deleted.withLock({ $0[user] }), time > horizon(now) else { return nil }
        return time
    }

    /// The users deleted within the window, as lower-case ids (what tokens' `sub` carry): for a
    /// sweep over many viewers at once, which then compares strings instead of parsing each.
    package func recent(now: Date = Date()) -> Set<String> {
        let horizon = self.horizon(now)
        return deleted.withLock { deleted in Set(deleted.compactMap { $0.value > horizon ? $0.key.uuidString.lowercased() : nil }) }
    }

    /// The oldest deletion time still within the window at `now`.
    private func horizon(_ now: Date) -> Date {
        now.addingTimeInterval(-Double(window.components.seconds))
    }

    /// How many deletions are remembered now.
    package var count: Int { deleted.withLock { $0.count } }
}
