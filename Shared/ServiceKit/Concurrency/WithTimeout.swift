import Synchronization

/// Runs `operation`, failing with `timeoutError` (made only then) as soon as `timeout` has passed without it
/// finishing.
///
/// The deadline holds even when the operation does not react to cancellation: a query on a
/// connection whose server has gone silent (a network partition) waits for TCP, not for us. The
/// operation runs in a task of its own, which is cancelled at the deadline and left to end by
/// itself; its result is then dropped. So what it was doing may still complete after the caller
/// was told it timed out (a transaction that commits once the network is back), which callers of
/// a timed-out request must assume anyway.
package func withTimeout<Result: Sendable>(
    _ timeout: Duration,
    error timeoutError: @escaping @autoclosure @Sendable () -> any Error,
    operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let outcome = FirstOutcome<Result>()
    let work = outcome.run(operation)
    let timer = Task {
        try? await Task.sleep(for: timeout)
        guard !Task.isCancelled else { return }
        outcome.settle(.failure(timeoutError()))
        work.cancel()
    }
    return try await withTaskCancellationHandler {
        let result = await outcome.value()
        timer.cancel()
        return try result.get()
    } onCancel: {
        // The caller has gone (a client that hung up): it waits no longer either.
        outcome.settle(.failure(CancellationError()))
        work.cancel()
        timer.cancel()
    }
}

/// The first of several outcomes to arrive, for one waiter: what lets a caller stop waiting for an
/// operation that runs in a task of its own.
package final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var outcome: Result<Value, any Error>?
        var waiter: CheckedContinuation<Result<Value, any Error>, Never>?
    }

    private let state = Mutex(State())

    package init() {}

    /// Records `outcome` unless one came first, and wakes the waiter.
    package func settle(_ outcome: Result<Value, any Error>) {
        let waiter: CheckedContinuation<Result<Value, any Error>, Never>? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: outcome)
    }

    /// Runs `operation` in a task of its own, settling with what it returns or throws unless
    /// something else settles first; the task, to cancel.
    package func run(_ operation: @escaping @Sendable () async throws -> Value) -> Task<Void, Never> {
        Task {
            do {
                settle(.success(try await operation()))
            } catch {
                settle(.failure(error))
            }
        }
    }

    package func value() async -> Result<Value, any Error> {
        await withCheckedContinuation { continuation in
            let ready: Result<Value, any Error>? = state.withLock { state in
                if let outcome = state.outcome { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
