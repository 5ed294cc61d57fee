import Foundation
import Identity

/// Mints access tokens for a user's session, with GoTrue's claims.
struct TokenIssuer: Sendable {
    let signer: AccessTokenSigner
    let issuer: String
    let lifetime: Duration

    /// An access token for `user` in session `sessionID` (authenticated at `authenticatedAt`), paired
    /// with `refreshToken`.
    func issue(for user: UserRecord, sessionID: UUID, authenticatedAt: Date, refreshToken: RefreshToken, now: Date = Date()) throws -> IssuedTokens {
        let issuedAt = Int(now.timeIntervalSince1970)
        let expiresAt = issuedAt + Int(lifetime.components.seconds)
        let claims = AccessTokenClaims(
            issuer: issuer,
            subject: user.id.uuidString.lowercased(),
            expiresAt: expiresAt,
            issuedAt: issuedAt,
            email: user.email,
            appMetadata: user.appMetadata,
            userMetadata: user.userMetadata,
            sessionID: sessionID.uuidString.lowercased(),
            authenticationMethods: [.init(method: "password", timestamp: Int(authenticatedAt.timeIntervalSince1970))]
        )
        return IssuedTokens(
            accessToken: try signer.sign(claims),
            refreshToken: refreshToken.value,
            expiresAt: expiresAt,
            expiresIn: expiresAt - issuedAt
        )
    }
}
