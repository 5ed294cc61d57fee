import Foundation
import Synchronization

/// A dedicated thread that serves one librdkafka handle: it blocks in librdkafka's poll call (which
/// wakes as soon as there is something to serve, or after its timeout), never in Swift's concurrency
/// pool, and never spins.
final class PollThread: Sendable {
    private let running = Atomic<Bool>(true)
    private let finished = OneShotSignal()

    /// Starts a thread named `name` that calls `iteration` until `stop()`, then `finish` once.
    init(name: String, iteration: @escaping @Sendable () -> Void, finish: @escaping @Sendable () -> Void = {}) {
        let thread = Thread { [self] in
            while running.load(ordering: .acquiring) {
                iteration()
            }
            finish()
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Asks the loop to end after its current iteration and waits until `finish` has run.
    func stop() async {
        running.store(false, ordering: .releasing)
        await finished.wait()
    }
}

/// A signal raised once that any number of tasks can await, before or after it is raised.
final class OneShotSignal: Sendable {
    private let state = Mutex<(raised: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLock { state in
            state.raised = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let raised = state.withLock { state in
                if !state.raised { state.waiters.append(continuation) }
                return state.raised
            }
            if raised { continuation.resume() }
        }
    }
}
