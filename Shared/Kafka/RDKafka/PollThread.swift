import AsyncSignals
import Foundation
import Synchronization

/// A dedicated thread that serves one librdkafka handle: it blocks in librdkafka's poll call (which
/// wakes as soon as there is something to serve, or after its timeout), never in Swift's concurrency
/// pool, and never spins.
final class PollThread: Sendable {
    private let running = Atomic<Bool>(true)
    private let finished = OneShot<Void>()

    /// Starts a thread named `name` that calls `iteration` until `stop()`, then `finish` once.
    init(name: String, iteration: @escaping @Sendable () -> Void, finish: @escaping @Sendable () -> Void = {}) {
        let thread = Thread { [self] in
            while running.load(ordering: .acquiring) {
                iteration()
            }
            finish()
            finished.complete(())
        }
        thread.name = name
        thread.start()
    }

    /// Asks the loop to end after its current iteration and waits until `finish` has run.
    func stop() async {
        running.store(false, ordering: .releasing)
        await finished.value()
    }
}
