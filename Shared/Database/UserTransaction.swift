import Logging
import PostgresNIO

extension PostgresClient {
    /// Runs `body` in a transaction whose `app.user_id` setting is `userID`, for the row-level
    /// security policies of user-owned tables (`current_setting('app.user_id', true)`).
    ///
    /// The setting is transaction-local (`set_config(…, true)`, the same as `SET LOCAL`), so it never
    /// leaks to the next user of the pooled connection; the value is bound as a parameter.
    /// - Throws: the error of `body` as it was thrown (after rolling back), or the database's.
    @discardableResult
    package func withUserTransaction<Result: Sendable>(
        userID: String,
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(setting: "app.user_id", to: userID, logger: logger, isolation: isolation, body)
    }

    /// Runs `body` in a transaction done for the service itself, not for a user (projections,
    /// collectors, a signed link's download): `app.service` is `on`, which the policies of a
    /// schema that has such work let see every row. Transaction-local, as a user's setting is.
    @discardableResult
    package func withServiceTransaction<Result: Sendable>(
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(setting: "app.service", to: "on", logger: logger, isolation: isolation, body)
    }

    private func withTransaction<Result: Sendable>(
        setting name: String,
        to value: String,
        logger: Logger,
        isolation: isolated (any Actor)?,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(settings: [(name, value)], logger: logger, isolation: isolation, body)
    }

    /// Runs `body` in a transaction with each of `settings` (name, value) set transaction-locally,
    /// in one round trip: for policies that read more than the user (a role, say). What `body`
    /// asks of `CommitHooks.current` runs once the transaction has committed.
    @discardableResult
    package func withTransaction<Result: Sendable>(
        settings: [(name: String, value: String)],
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let hooks = CommitHooks()
        return try await CommitHooks.$current.withValue(hooks) {
            let result = try await unwrappingTransactionErrors {
                try await withTransaction(logger: logger, isolation: isolation) { connection in
                    if !settings.isEmpty {
                        var bindings = PostgresBindings()
                        let calls = bindings.settingLocally(settings)
                        try await connection.query(PostgresQuery(unsafeSQL: "SELECT " + calls.joined(separator: ", "), binds: bindings), logger: logger)
                    }
                    return try await body(connection)
                }
            }
            hooks.run()
            return result
        }
    }
}

/// Runs a transaction, giving back what its closure threw as it was thrown: PostgresNIO wraps it
/// in `PostgresTransactionError`, and a service's domain errors (its problems) must reach the
/// edge unchanged. A failed `BEGIN`, `COMMIT` or rollback comes out as PostgresNIO reports it.
package func unwrappingTransactionErrors<Result>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> sending Result
) async throws -> sending Result {
    do {
        return try await body()
    } catch let error as PostgresTransactionError {
        guard let thrown = error.closureError, error.rollbackError == nil else { throw error }
        throw thrown
    }
}

extension PostgresBindings {
    /// A `set_config(name, value, true)` call (transaction-local) for each of `settings`, their
    /// names and values bound after what is bound already: the calls, for the caller's statement.
    package mutating func settingLocally(_ settings: [(name: String, value: String)]) -> [String] {
        settings.map { setting in
            append(setting.name)
            append(setting.value)
            return "set_config($\(count - 1), $\(count), true)"
        }
    }
}
