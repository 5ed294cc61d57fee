import Contracts
import EventBus
import Foundation
import Logging
import Mail
import PostgresNIO

/// Deleting an account: the person's own (`DELETE /user`, with their password or a nonce from
/// `GET /reauthenticate`) or an admin's (`DELETE /admin/users/{id}`).
///
/// One transaction removes the user row and with it (by foreign key) identities, sessions, refresh
/// tokens, codes and PKCE flows; the address's rate-limit and lock rows and the mail to it go too,
/// and `auth.user.deleted.v1` is appended to the outbox, so every other service erases what it
/// keeps. The address can sign up again at once. An account that owns restaurants (as tracking's
/// `tracking.restaurants` says, projected into `restaurant_owners`) is refused until they are
/// handed over.
struct AccountDeletion: Sendable {
    /// What proves it is the account's owner asking.
    enum Proof: Sendable {
        case password(String)
        case nonce(String)
    }

    let client: PostgresClient
    let outbox: Outbox
    let mailOutbox: MailOutbox
    let hasher: PasswordHasher
    let codes: OneTimeCodes
    let logger: Logger

    /// `GET /reauthenticate`: mails the signed-in user a nonce (a six-digit code), good once.
    /// - Throws: `AuthError.overEmailSendRateLimit` within a minute of the last one.
    func reauthenticate(_ session: AuthenticatedSession) async throws {
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            guard let user = try await connection.user(id: session.userID, logger: logger) else { throw AuthError.userNotFound }
            let address = user.email.lowercased()
            try await codes.admitMail(AuthMailer.Kind.reauthentication.rawValue, to: address, on: connection)
            try await codes.mail(.reauthentication, to: address, user: user.id, challenge: nil, redirectTo: "", on: connection)
        }
    }

    /// `DELETE /user`: the signed-in user deletes their own account, proving it is them.
    /// - Throws: `AuthError.reauthenticationNeeded` without a proof, `.invalidCredentials` for a
    ///   wrong password, `.reauthenticationNotValid` for a wrong or spent nonce,
    ///   `.userOwnsRestaurants`.
    func deleteOwn(_ session: AuthenticatedSession, proof: Proof?) async throws {
        let userID = session.userID
        switch proof {
        case nil:
            throw AuthError.reauthenticationNeeded
        case .password(let password)?:
            let stored = try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
                try await connection.passwordHash(of: userID, logger: logger)
            }
            guard let stored else { throw AuthError.userNotFound }
            // An account without a password takes none: it proves itself with a nonce.
            guard try await hasher.verify(password, against: stored) else { throw AuthError.invalidCredentials }
            _ = try await delete(userID)
        case .nonce(let nonce)?:
            try await countingFailure(of: userID) {
                _ = try await delete(userID) { [self] user, connection in try await spend(nonce, of: user, on: connection) }
            }
        }
    }

    /// Proves `session`'s user by `nonce` (`GET /reauthenticate`'s), spending it, on a transaction
    /// of its own: a password change under `AUTH_SECURE_PASSWORD_CHANGE`.
    /// - Throws: `AuthError.reauthenticationNotValid` for a wrong or spent nonce (counted toward
    ///   the lock).
    func prove(_ session: AuthenticatedSession, nonce: String) async throws {
        try await countingFailure(of: session.userID) {
            try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
                guard let user = try await connection.user(id: session.userID, logger: logger) else { throw AuthError.userNotFound }
                try await spend(nonce, of: user, on: connection)
            }
        }
    }

    /// Whether `session` began more than a day ago (a password change under
    /// `AUTH_SECURE_PASSWORD_CHANGE` then needs a nonce; a session that a mailed code or link began
    /// is new).
    func isOlderThanADay(_ session: AuthenticatedSession) async throws -> Bool {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            let rows = try await connection.query(
                "SELECT created_at < now() - interval '24 hours' FROM sessions WHERE id = \(session.sessionID)",
                logger: logger
            )
            return try await rows.collect().first?.decode(Bool.self) ?? true
        }
    }

    private func spend(_ nonce: String, of user: UserRecord, on connection: PostgresConnection) async throws {
        let redeemed = try await codes.redeem(code: nonce, address: user.email.lowercased(), kinds: [.reauthentication], on: connection)
        guard redeemed?.userID == user.id else { throw AuthError.reauthenticationNotValid }
    }

    /// Runs `body`; a wrong nonce in it is counted toward the lock, on a transaction of its own
    /// (the body's rolled back).
    private func countingFailure(of userID: UUID, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch AuthError.reauthenticationNotValid {
            try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
                guard let user = try await connection.user(id: userID, logger: logger) else { return }
                try await codes.recordFailure(for: user.email.lowercased(), on: connection)
            }
            throw AuthError.reauthenticationNotValid
        }
    }

    /// Deletes account `userID` once `check` (on the deletion's transaction, the user row locked)
    /// lets it, and answers the account as it was.
    /// - Throws: `AuthError.userNotFound`, `.userOwnsRestaurants`, or what `check` throws.
    func delete(
        _ userID: UUID,
        check: @escaping @Sendable (UserRecord, PostgresConnection) async throws -> Void = { _, _ in }
    ) async throws -> UserRecord {
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            guard let user = try await connection.user(id: userID, forUpdate: true, logger: logger) else { throw AuthError.userNotFound }
            try await check(user, connection)
            let owned = try await connection.query("SELECT count(*) FROM restaurant_owners WHERE owner_id = \(userID)", logger: logger)
            if let count = try await owned.collect().first?.decode(Int.self), count > 0 { throw AuthError.userOwnsRestaurants(count) }
            let addresses = [user.email.lowercased()] + (user.emailChange.map { [$0.lowercased()] } ?? [])
            let deleted = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM users WHERE id = \(userID) RETURNING clock_timestamp() AS at
                ), limits AS (
                    DELETE FROM mail_sends WHERE address = ANY(\(addresses))
                ), locks AS (
                    DELETE FROM code_failures WHERE address = ANY(\(addresses))
                )
                SELECT at FROM gone
                """,
                logger: logger
            )
            guard let deletedAt = try await deleted.collect().first?.decode(Date.self) else { throw AuthError.userNotFound }
            try await mailOutbox.erase(addresses: addresses, user: userID, on: connection, logger: logger)
            let event = UserDeleted(userId: userID, deletedAt: deletedAt)
            try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
            logger.info("Account deleted", metadata: ["user": "\(userID)"])
            return user
        }
    }
}
