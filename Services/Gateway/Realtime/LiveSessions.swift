import Synchronization

/// The realtime connections of each signed-in user, so that a deleted account's are closed the
/// moment the deletion is read (`DeletedUsersFeed`), whatever protocol they speak: each session
/// registers how it is ended once it knows its user, and unregisters when it ends.
final class LiveSessions: Sendable {
    private struct State {
        var nextID: UInt64 = 1
        var byUser: [String: [UInt64: @Sendable () -> Void]] = [:]
    }

    private let state = Mutex(State())

    /// Registers a session of `user`; `close` ends it. Returns its registration.
    func register(user: String, close: @escaping @Sendable () -> Void) -> Registration {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.byUser[user, default: [:]][state.nextID] = close
            return state.nextID
        }
        return Registration(user: user, id: id)
    }

    func unregister(_ registration: Registration) {
        state.withLock { state in
            state.byUser[registration.user]?.removeValue(forKey: registration.id)
            if state.byUser[registration.user]?.isEmpty == true { state.byUser.removeValue(forKey: registration.user) }
        }
    }

    /// Ends every session of `user`.
    func close(user: String) {
        let closers = state.withLock { state in state.byUser.removeValue(forKey: user).map { Array($0.values) } ?? [] }
        for close in closers { close() }
    }

    struct Registration: Sendable, Hashable {
        let user: String
        let id: UInt64
    }
}
