import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Sessions and their refresh tokens: starting one, rotating its refresh token, signing out.
///
/// Every refresh spends the presented token and issues a new pair. The spent token keeps the pair
/// it was exchanged for, sealed under a key derived from the token itself (`RefreshToken.seal`):
/// - presented again within the reuse interval, the same pair comes back — a retry from a flaky
///   network, or two refreshes racing (the row lock makes the second wait for the first);
/// - presented later while the token it was exchanged for is still the session's active one (GoTrue's
///   rule: the app never stored the answer, being offline or killed), that active token comes back
///   with a fresh access token, at any time;
/// - any other spent token can only have been copied: the whole session is revoked.
struct Sessions: Sendable {
    /// Which sessions `POST /logout` ends.
    enum LogoutScope: String, Sendable {
        /// Every session of the user.
        case global
        /// The session of the presented token.
        case local
        /// Every session but that one.
        case others
    }

    let client: PostgresClient
    let issuer: TokenIssuer
    let reuseInterval: Duration
    let inactivityTimeout: Duration
    let logger: Logger

    /// Starts a session for `user` on `connection`, inside the caller's transaction.
    func start(for user: UserRecord, userAgent: String?, on connection: PostgresConnection) async throws -> IssuedTokens {
        let sessionID = UUID()
        let refreshToken = RefreshToken.generate()
        let agent = userAgent.map { String($0.prefix(512)) }
        let rows = try await connection.query(
            """
            INSERT INTO sessions (id, user_id, user_agent) VALUES (\(sessionID), \(user.id), \(agent)) RETURNING created_at
            """,
            logger: logger
        )
        let createdAt = try await rows.collect().first?.decode(Date.self) ?? Date()
        try await connection.query(
            """
            INSERT INTO refresh_tokens (token_hash, session_id, user_id) VALUES (\(refreshToken.hash), \(sessionID), \(user.id))
            """,
            logger: logger
        )
        return try issuer.issue(for: user, sessionID: sessionID, authenticatedAt: createdAt, refreshToken: refreshToken)
    }

    /// Signs `userID` in on `connection`, inside the caller's transaction: the account's
    /// `last_sign_in_at`, then a new session. `nil` when the account is gone.
    func signIn(_ userID: UUID, userAgent: String?, on connection: PostgresConnection) async throws -> (IssuedTokens, UserRecord)? {
        try await connection.query("UPDATE users SET last_sign_in_at = now() WHERE id = \(userID)", logger: logger)
        guard let user = try await connection.user(id: userID, logger: logger) else { return nil }
        return (try await start(for: user, userAgent: userAgent, on: connection), user)
    }

    /// Exchanges `presented` for a new pair.
    /// - Throws: `AuthError.refreshTokenNotFound` for a token that does not exist (or whose session
    ///   is gone), `.refreshTokenAlreadyUsed` for a token spent twice over presented after the reuse
    ///   interval (the session is then revoked), `.sessionExpired` for a session idle past the
    ///   inactivity timeout.
    func refresh(_ presented: RefreshToken) async throws -> (IssuedTokens, UserRecord) {
        let reuseSeconds = reuseInterval.milliseconds / 1_000
        let idleSeconds = inactivityTimeout.milliseconds / 1_000
        let outcome: RefreshOutcome = try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            let rows = try await connection.query(
                """
                SELECT rt.session_id, rt.user_id, rt.successor, rt.spent_at IS NOT NULL,
                       clock_timestamp() - rt.spent_at <= \(reuseSeconds) * interval '1 second',
                       s.created_at, s.refreshed_at < clock_timestamp() - \(idleSeconds) * interval '1 second'
                FROM refresh_tokens rt JOIN sessions s ON s.id = rt.session_id
                WHERE rt.token_hash = \(presented.hash)
                FOR UPDATE OF rt
                """,
                logger: logger
            )
            guard let row = try await rows.collect().first else { throw AuthError.refreshTokenNotFound }
            let (sessionID, userID, successor, spent, withinReuse, authenticatedAt, idle) =
                try row.decode((UUID, UUID, Data?, Bool, Bool?, Date, Bool).self)
            if idle {
                try await connection.query("DELETE FROM sessions WHERE id = \(sessionID)", logger: logger)
                return .revoked(.sessionExpired)
            }
            guard let user = try await connection.user(id: userID, logger: logger) else { throw AuthError.refreshTokenNotFound }
            if spent, let successor {
                if withinReuse == true {
                    return .issued(try await latestTokens(from: presented, sealed: successor, on: connection), user)
                }
                if let active = try await activeChild(of: presented, sealed: successor, on: connection) {
                    // The app never stored the answer (offline, or killed): the active token
                    // again, with a fresh access token.
                    let tokens = try issuer.issue(for: user, sessionID: sessionID, authenticatedAt: authenticatedAt, refreshToken: active)
                    try await connection.query("UPDATE sessions SET refreshed_at = clock_timestamp() WHERE id = \(sessionID)", logger: logger)
                    return .issued(tokens, user)
                }
                logger.warning("a refresh token spent twice over was presented; session revoked", metadata: ["session_id": "\(sessionID)"])
                try await connection.query("DELETE FROM sessions WHERE id = \(sessionID)", logger: logger)
                return .revoked(.refreshTokenAlreadyUsed)
            }
            let next = RefreshToken.generate()
            let tokens = try issuer.issue(for: user, sessionID: sessionID, authenticatedAt: authenticatedAt, refreshToken: next)
            // Spend the presented token, store its successor and touch the session: one round trip.
            try await connection.query(
                """
                WITH spent AS (
                    UPDATE refresh_tokens SET spent_at = clock_timestamp(), successor = \(try presented.seal(tokens))
                    WHERE token_hash = \(presented.hash)
                ), issued AS (
                    INSERT INTO refresh_tokens (token_hash, session_id, user_id) VALUES (\(next.hash), \(sessionID), \(userID))
                )
                UPDATE sessions SET refreshed_at = clock_timestamp() WHERE id = \(sessionID)
                """,
                logger: logger
            )
            return .issued(tokens, user)
        }
        switch outcome {
        case .issued(let tokens, let user): return (tokens, user)
        case .revoked(let error): throw error
        }
    }

    /// Ends the sessions `scope` names, for the user of `session`.
    func logout(_ session: AuthenticatedSession, scope: LogoutScope) async throws {
        _ = try await client.withUserTransaction(user: session.userID, logger: logger) { [logger] connection in
            switch scope {
            case .global:
                try await connection.query("DELETE FROM sessions WHERE user_id = \(session.userID)", logger: logger)
            case .local:
                try await connection.query("DELETE FROM sessions WHERE id = \(session.sessionID)", logger: logger)
            case .others:
                try await connection.query(
                    """
                    DELETE FROM sessions WHERE user_id = \(session.userID) AND id <> \(session.sessionID)
                    """,
                    logger: logger
                )
            }
        }
    }

    /// The token `presented` was exchanged for, when that is still the session's active one
    /// (unspent): `presented` is then the active token's parent.
    private func activeChild(of presented: RefreshToken, sealed: Data, on connection: PostgresConnection) async throws -> RefreshToken? {
        guard let child = RefreshToken(presented: try presented.open(sealed).refreshToken) else { return nil }
        let rows = try await connection.query(
            "SELECT 1 FROM refresh_tokens WHERE token_hash = \(child.hash) AND spent_at IS NULL",
            logger: logger
        )
        return try await rows.collect().isEmpty ? nil : child
    }

    /// The pair a spent token leads to: its successor, or, when that was spent in turn (a retry
    /// arriving after the client already refreshed again), the newest one down the chain.
    private func latestTokens(from presented: RefreshToken, sealed: Data, on connection: PostgresConnection) async throws -> IssuedTokens {
        var tokens = try presented.open(sealed)
        for _ in 0..<64 {
            guard let next = RefreshToken(presented: tokens.refreshToken) else { break }
            let rows = try await connection.query(
                """
                SELECT successor FROM refresh_tokens WHERE token_hash = \(next.hash) AND spent_at IS NOT NULL
                """,
                logger: logger
            )
            guard let row = try await rows.collect().first, let successor = try row.decode(Data?.self) else { break }
            tokens = try next.open(successor)
        }
        tokens.expiresIn = max(0, tokens.expiresAt - Int(Date().timeIntervalSince1970))
        return tokens
    }

    private enum RefreshOutcome: Sendable {
        case issued(IssuedTokens, UserRecord)
        /// The session was revoked; the transaction commits that, then the error is thrown.
        case revoked(AuthError)
    }
}
