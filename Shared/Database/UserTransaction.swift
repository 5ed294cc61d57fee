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
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(settings: [("app.user_id", userID)], logger: logger, body)
    }

    /// Runs `body` in a transaction done for the service itself, not for a user (projections,
    /// collectors, a signed link's download): `app.service` is `on`, which the policies of a
    /// schema that has such work let see every row. Transaction-local, as a user's setting is.
    @discardableResult
    package func withServiceTransaction<Result: Sendable>(
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(settings: [("app.service", "on")], logger: logger, body)
    }

    /// Runs `body` in a transaction with each of `settings` (name, value) set transaction-locally,
    /// in one round trip: for policies that read more than the user (a role, say); none for a
    /// plain transaction. What `body` asks of `CommitHooks.current` runs once the transaction has
    /// committed. Should the connection close before the transaction is over, it fails at once
    /// with `ConnectionLost` (`abandoningIfClosed`) rather than wait on a statement that cannot
    /// return.
    @discardableResult
    package func withTransaction<Result: Sendable>(
        settings: [(name: String, value: String)],
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let hooks = CommitHooks()
        return try await CommitHooks.$current.withValue(hooks) {
            let result = try await unwrappingTransactionErrors {
                try await withConnection { connection in
                    try await connection.abandoningIfClosed {
                        try await connection.withTransaction(logger: logger) { connection in
                            if !settings.isEmpty {
                                var bindings = PostgresBindings()
                                let calls = bindings.settingLocally(settings)
                                try await connection.query(
                                    PostgresQuery(unsafeSQL: "SELECT " + calls.joined(separator: ", "), binds: bindings),
                                    logger: logger
                                )
                            }
                            return try await body(connection)
                        }
                    }
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
        // The server ending the session tells it before the socket closes; whichever comes
        // first, the transaction is lost the same way.
        if [error.beginError, error.closureError].contains(where: { ($0 as? PSQLError)?.endsTheSession == true }) { throw ConnectionLost() }
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
