import Synchronization

/// Runs one piece of work per key at a time: a caller that asks for a key already in flight waits
/// for that run's result instead of starting its own.
final class Coalescer<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let inFlight = Mutex<[Key: Task<Value, Never>]>([:])

    /// The result of `work` for `key`, and whether this call ran it (`false`: it joined a run
    /// already in flight). The work runs in its own task: a caller that is cancelled stops waiting,
    /// not the work the others wait for.
    func run(_ key: Key, _ work: @escaping @Sendable () async -> Value) async -> (value: Value, ranIt: Bool) {
        let (task, ranIt) = inFlight.withLock { tasks -> (Task<Value, Never>, Bool) in
            if let running = tasks[key] { return (running, false) }
            let task = Task {
                let value = await work()
                self.inFlight.withLock { _ = $0.removeValue(forKey: key) }
                return value
            }
            tasks[key] = task
            return (task, true)
        }
        return (await task.value, ranIt)
    }
}
