import Synchronization

/// Work to do once the transaction it was asked for in has committed, and only then: waking this
/// process's outbox relay for the events the transaction wrote, say, instead of a `NOTIFY` that
/// every committing writer would queue behind (Postgres serialises the commits of transactions that
/// notify). A transaction run with `PostgresClient.withTransaction(settings:logger:_:)` binds
/// `current` for its body and runs what was asked after its `COMMIT`; after a rollback, nothing.
package final class CommitHooks: Sendable {
    /// The hooks of the transaction the current task is in; nil outside one of ours.
    @TaskLocal package static var current: CommitHooks?

    private let hooks = Mutex<[@Sendable () -> Void]>([])

    package init() {}

    /// Runs `hook` once the transaction has committed (at most once per hook).
    package func afterCommit(_ hook: @escaping @Sendable () -> Void) {
        hooks.withLock { $0.append(hook) }
    }

    /// Runs and forgets the hooks asked for.
    package func run() {
        for hook in hooks.withLock({ hooks in
            defer { hooks.removeAll() }
            return hooks
        }) { hook() }
    }
}
