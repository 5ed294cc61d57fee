/// Runs `operation`, failing with `timeoutError()` if it has not finished within `timeout`.
///
/// The operation's task is cancelled on timeout and awaited (structured concurrency), so it must
/// react to cancellation for the timeout to be prompt.
package func withTimeout<Result: Sendable>(
    _ timeout: Duration,
    error timeoutError: @escaping @Sendable () -> any Error,
    operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw timeoutError()
        }
        defer { group.cancelAll() }
        // The first child to finish decides: the operation's result, or the timeout.
        return try await group.next()!
    }
}
