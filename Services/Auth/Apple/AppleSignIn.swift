import Foundation
import Identity
import Logging
import PostgresNIO

/// `POST /token?grant_type=id_token {"provider":"apple","id_token","nonce"}`: Sign in with Apple.
/// The account is the one holding the Apple identity (`sub`); else the one with the token's
/// address when that address was proven (a mailed code or link, an admin's `email_confirm`,
/// another verified identity), which gains the Apple identity; else, when an account holds the
/// address unproven, none (422 `email_exists`: no silent takeover of an account someone opened
/// with another person's address); else a new account.
struct AppleSignIn: Sendable {
    let settings: AppleSettings
    let keys: AppleKeySet
    let client: PostgresClient
    let accounts: Accounts
    let sessions: Sessions
    let logger: Logger

    /// - Throws: `AuthError.providerDisabled` without client ids, `.badIDToken` for a token that
    ///   does not check, `.emailExists` for an unproven account with the token's address.
    func signIn(idToken: String, nonce: String?, userAgent: String?) async throws -> (IssuedTokens, UserRecord) {
        guard settings.isEnabled else { throw AuthError.providerDisabled }
        let unverified = try AppleIdentityToken.parse(idToken)
        let apple = try AppleIdentityToken.verify(unverified, key: try await keys.key(unverified.keyID), settings: settings, rawNonce: nonce)
        var data: [String: JSONValue] = [
            "sub": .string(apple.subject), "email_verified": .bool(apple.emailVerified), "is_private_email": .bool(apple.isPrivateEmail),
            "iss": .string(settings.issuer), "provider_id": .string(apple.subject),
        ]
        if let email = apple.email { data["email"] = .string(email) }
        let identity = Accounts.ProviderIdentity(provider: "apple", providerID: apple.subject, data: data)
        // Two first sign-ins at once: the second finds the account the first made.
        for attempt in 0..<2 {
            if let signedIn = try await signInExisting(identity, email: apple.emailVerified ? apple.email : nil, userAgent: userAgent) {
                return signedIn
            }
            guard let email = apple.email, apple.emailVerified else {
                throw AuthError.badIDToken("the token carries no verified email and no account has this Apple id")
            }
            do {
                return try await accounts.create(for: identity, email: email, userAgent: userAgent)
            } catch AuthError.emailExists where attempt == 0 {
                continue
            }
        }
        throw AuthError.emailExists
    }

    /// Signs in the account with the Apple identity, or links it to the account of a proven
    /// `email`; `nil` when there is neither.
    private func signInExisting(_ identity: Accounts.ProviderIdentity, email: String?, userAgent: String?) async throws -> (IssuedTokens, UserRecord)?
    {
        let dataJSON = try String(decoding: JSONEncoder().encode(identity.data), as: UTF8.self)
        return try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            let known = try await connection.query(
                """
                UPDATE identities SET identity_data = \(dataJSON)::jsonb, last_sign_in_at = now(), updated_at = now()
                WHERE provider = \(identity.provider) AND provider_id = \(identity.providerID)
                RETURNING user_id
                """,
                logger: logger
            )
            var userID = try await known.collect().first?.decode(UUID.self)
            if userID == nil, let email {
                let holder = try await connection.query(
                    "SELECT id, email_proven_at IS NOT NULL FROM users WHERE lower(email) = \(email) FOR UPDATE",
                    logger: logger
                )
                guard let (id, proven) = try await holder.collect().first?.decode((UUID, Bool).self) else { return nil }
                guard proven else { throw AuthError.emailExists }
                try await connection.query(
                    """
                    INSERT INTO identities (id, user_id, provider, provider_id, identity_data, last_sign_in_at)
                    VALUES (\(UUID()), \(id), \(identity.provider), \(identity.providerID), \(dataJSON)::jsonb, now())
                    """,
                    logger: logger
                )
                userID = id
            }
            guard let userID else { return nil }
            guard let signedIn = try await sessions.signIn(userID, userAgent: userAgent, on: connection) else { throw AuthError.userNotFound }
            return signedIn
        }
    }
}
