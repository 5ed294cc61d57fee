import Database
import Foundation
import Logging
import PostgresNIO

/// The two kinds of transaction auth runs, matching its row-level security policies
/// (`Migrations/0001_users_sessions.sql`).
extension PostgresClient {
    /// A transaction for a flow that comes before a user is known (sign-up, sign-in, refresh) or
    /// reads across users on purpose (public lists): `app.auth_flow` is on for it alone.
    /// Errors thrown by `body` come out as they were thrown.
    func withAuthFlowTransaction<Result: Sendable>(
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTransaction(settings: [("app.auth_flow", "on")], logger: logger, body)
    }

    /// A transaction acting for signed-in user `userID`, who sees only their own rows.
    /// Errors thrown by `body` come out as they were thrown.
    func withUserTransaction<Result: Sendable>(
        user userID: UUID,
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withUserTransaction(userID: userID.uuidString.lowercased(), logger: logger) { connection in
            try await body(connection)
        }
    }
}

extension Error {
    /// The unique index a statement collided with, when that is what failed.
    var violatedUniqueIndex: String? {
        guard let error = self as? PSQLError, error.serverInfo?[.sqlState] == "23505" else { return nil }
        return error.serverInfo?[.constraintName]
    }
}
