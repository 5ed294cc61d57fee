import Foundation
import Hummingbird
import Identity
import Logging
import PostgresNIO
import ServiceKit

/// A request's verified access token, whose session still exists.
struct AuthenticatedSession: Sendable {
    var claims: AccessTokenClaims
    var userID: UUID
    var sessionID: UUID
}

/// Authenticates `Authorization: Bearer <access token>` on the routes that act for a user.
///
/// The token is verified locally (signature, expiry, audience, issuer). Unlike the other services,
/// auth also checks that the token's session still exists, so a signed-out or revoked session's
/// tokens stop working here at once rather than when they expire.
struct BearerAuthenticator: Sendable {
    let verifier: AccessTokenVerifier
    let client: PostgresClient
    let inactivityTimeout: Duration
    let logger: Logger

    /// - Throws: `AuthError.noAuthorization` without a bearer token, `.badJWT` for a token that does
    ///   not verify, `.sessionNotFound` / `.sessionExpired` for a session that ended.
    func authenticate(_ request: Request) async throws -> AuthenticatedSession {
        try await withSession(request) { session, _ in session }
    }

    /// Authenticates `request`, then runs `body` in the same transaction as the session check, acting
    /// for the token's user: one transaction per request instead of two.
    /// - Throws: what `authenticate` throws, or what `body` throws.
    func withSession<Result: Sendable>(
        _ request: Request,
        _ body: @escaping @Sendable (AuthenticatedSession, PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withSession(try verifiedToken(request), body)
    }

    /// As `withSession(_:_:)` for a token verified already (the data API's).
    func withSession<Result: Sendable>(
        _ session: AuthenticatedSession,
        _ body: @escaping @Sendable (AuthenticatedSession, PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let idleSeconds = inactivityTimeout.milliseconds / 1_000
        return try await client.withUserTransaction(user: session.userID, logger: logger) { [logger] connection in
            let rows = try await connection.query(
                """
                SELECT refreshed_at < now() - \(idleSeconds) * interval '1 second' FROM sessions
                WHERE id = \(session.sessionID) AND user_id = \(session.userID)
                """,
                logger: logger
            )
            switch try await rows.collect().first?.decode(Bool.self) {
            case nil: throw AuthError.sessionNotFound
            case true?: throw AuthError.sessionExpired
            case false?: return try await body(session, connection)
            }
        }
    }

    /// The verified token of `request`, without looking at its session.
    func verifiedToken(_ request: Request) throws(AuthError) -> AuthenticatedSession {
        guard let header = request.headers[.authorization] else { throw .noAuthorization }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw .noAuthorization }
        let claims: AccessTokenClaims
        do {
            claims = try verifier.verify(parts[1].trimmingCharacters(in: .whitespaces))
        } catch {
            throw .badJWT(Self.describe(error))
        }
        guard let userID = claims.userID, let sessionID = UUID(uuidString: claims.sessionID) else {
            throw .badJWT("invalid JWT: token has invalid claims: sub or session_id is not a UUID")
        }
        return AuthenticatedSession(claims: claims, userID: userID, sessionID: sessionID)
    }

    private static func describe(_ error: AccessTokenError) -> String {
        switch error {
        case .expired: "invalid JWT: unable to parse or verify signature, token has invalid claims: token is expired"
        case .malformed: "invalid JWT: unable to parse or verify signature, token is malformed"
        case .unsupportedAlgorithm: "invalid JWT: unable to parse or verify signature, signing method is not ES256"
        case .unknownKey, .keysUnavailable: "invalid JWT: unable to parse or verify signature, no key matches the token's kid"
        case .badSignature: "invalid JWT: unable to parse or verify signature, signature is invalid"
        case .wrongAudience: "invalid JWT: token has invalid claims: audience is not authenticated"
        case .wrongIssuer: "invalid JWT: token has invalid claims: issuer is not this server"
        case .userDeleted: "invalid JWT: token has invalid claims: the user has been deleted"
        }
    }
}
