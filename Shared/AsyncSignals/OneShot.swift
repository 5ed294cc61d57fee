import Dispatch
import Foundation
import Synchronization

/// A value that arrives once (how a process exited; that its output was drained), delivered to
/// every task waiting for it.
///
/// Waiting is not cut short by task cancellation (unlike iterating an `AsyncStream`): a cancelled
/// supervisor asks its child to stop and must still learn when it is gone. Timed waits end on a
/// timer, not by polling.
package final class OneShot<Value: Sendable>: Sendable {
    private enum Waiter {
        case value(CheckedContinuation<Value, Never>)
        case arrival(CheckedContinuation<Bool, Never>)
    }

    private struct State {
        var value: Value?
        var waiters: [UUID: Waiter] = [:]
    }

    private let state = Mutex(State())

    package init() {}

    /// Delivers `value` to every waiter. Only the first call counts.
    package func complete(_ value: Value) {
        let waiters = state.withLock { state -> [Waiter] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            switch waiter {
            case .value(let continuation): continuation.resume(returning: value)
            case .arrival(let continuation): continuation.resume(returning: true)
            }
        }
    }

    /// Whether the value has arrived.
    package var isComplete: Bool { current != nil }

    /// The value if it has arrived, without waiting.
    package var current: Value? { state.withLock { $0.value } }

    /// Waits for the value.
    package func value() async -> Value {
        await withCheckedContinuation { continuation in
            let value = state.withLock { state -> Value? in
                if state.value == nil { state.waiters[UUID()] = .value(continuation) }
                return state.value
            }
            if let value { continuation.resume(returning: value) }
        }
    }

    /// Whether the value arrives within `timeout`.
    package func arrives(within timeout: Duration) async -> Bool {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let arrived = state.withLock { state -> Bool in
                if state.value == nil { state.waiters[id] = .arrival(continuation) }
                return state.value != nil
            }
            if arrived {
                continuation.resume(returning: true)
                return
            }
            let nanoseconds = Int(timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                if case .arrival(let continuation) = waiter { continuation.resume(returning: false) }
            }
        }
    }
}
