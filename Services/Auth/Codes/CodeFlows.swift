import Contracts
import EventBus
import Foundation
import Identity
import Logging
import PostgresNIO

/// GoTrue's mailed flows: `/recover`, `/otp`, `/resend`, `/verify` (a code, or a link's token) and
/// the PKCE exchange (`grant_type=pkce`). A verified code or link proves its address (the account
/// is confirmed) and signs the account in.
struct CodeFlows: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let codes: OneTimeCodes
    let accounts: Accounts
    let sessions: Sessions
    let redirects: RedirectPolicy
    /// How long a PKCE auth code may wait to be exchanged.
    var flowLifetime: Duration = .seconds(300)
    let logger: Logger

    /// What the account a flow names is, when there is one.
    private struct Account: Sendable {
        var id: UUID
        var confirmed: Bool
    }

    /// `POST /signup` with `AUTH_EMAIL_CONFIRM`: the account is made unconfirmed and a sign-up
    /// code and link are mailed in its transaction; the User comes back, with no session.
    func signUpToConfirm(email: String, password: String, metadata: [String: JSONValue], redirectTo: String?) async throws -> UserRecord {
        let redirect = redirects.resolve(redirectTo)
        return try await accounts.signUpToConfirm(email: email, password: password, metadata: metadata) { [self] user, connection in
            try await codes.admitMail(AuthMailer.Kind.signup.rawValue, to: user.email, on: connection)
            try await codes.mail(.signup, to: user.email, user: user.id, challenge: nil, redirectTo: redirect, on: connection)
            guard let mailed = try await connection.user(id: user.id, logger: logger) else { throw AuthError.userNotFound }
            return mailed
        }
    }

    /// `POST /invite` (an admin's): an account for `email`, unconfirmed and without a password, and
    /// an invitation mail whose code or link signs it in (`/verify type=invite`).
    /// - Throws: `AuthError.emailExists` for a taken address.
    func invite(email raw: String, metadata: [String: JSONValue], redirectTo: String?) async throws -> UserRecord {
        let address = try Self.address(raw)
        let redirect = redirects.resolve(redirectTo)
        let created = try await accounts.create(.init(id: nil, email: address, password: nil, confirmed: false, metadata: metadata, role: nil))
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            try await codes.admitMail(AuthMailer.Kind.invite.rawValue, to: address, on: connection)
            try await codes.mail(.invite, to: address, user: created.id, challenge: nil, redirectTo: redirect, on: connection)
        }
        return created
    }

    /// `POST /recover`: mails a recovery code and link when `email` has an account, and does the
    /// same work and answers the same when it has not.
    func recover(email raw: String, challenge: OneTimeCodes.Challenge?, redirectTo: String?) async throws {
        let address = try Self.address(raw)
        let redirect = redirects.resolve(redirectTo)
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            try await codes.admitMail(AuthMailer.Kind.recovery.rawValue, to: address, on: connection)
            let account = try await account(address, on: connection)
            try await codes.mail(.recovery, to: address, user: account?.id, challenge: challenge, redirectTo: redirect, on: connection)
        }
    }

    /// `POST /otp`: mails a sign-in code and link; an address without an account gets one
    /// (unconfirmed, no password) and a sign-up mail, unless `createUser` is false.
    /// - Throws: `AuthError.otpDisabled` for an unknown address with `createUser` false.
    func signInWithCode(
        email raw: String,
        createUser: Bool,
        metadata: [String: JSONValue],
        challenge: OneTimeCodes.Challenge?,
        redirectTo: String?
    )
        async throws
    {
        let address = try Self.address(raw)
        let redirect = redirects.resolve(redirectTo)
        var existing = try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            try await account(address, on: connection)
        }
        if existing == nil {
            guard createUser else { throw AuthError.otpDisabled }
            do {
                let created = try await accounts.create(
                    .init(id: nil, email: address, password: nil, confirmed: false, metadata: metadata, role: nil)
                )
                existing = Account(id: created.id, confirmed: false)
            } catch AuthError.emailExists {
                // Made by a request racing this one: mail the account that won.
                existing = try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
                    try await account(address, on: connection)
                }
            }
        }
        guard let account = existing else { throw AuthError.otpDisabled }
        let kind: AuthMailer.Kind = account.confirmed ? .magiclink : .signup
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            try await codes.admitMail(kind.rawValue, to: address, on: connection)
            try await codes.mail(kind, to: address, user: account.id, challenge: challenge, redirectTo: redirect, on: connection)
        }
    }

    /// `POST /resend`: a new sign-up code for an account not confirmed yet (the one mailed before
    /// stops working), or new codes for a pending email change (`email` is the new address).
    /// Answers the same for any other address.
    func resend(type: String, email raw: String, secureEmailChange: Bool, redirectTo: String?) async throws {
        let address = try Self.address(raw)
        if type == AuthMailer.Kind.emailChange.rawValue {
            let pending: UUID? = try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
                let rows = try await connection.query("SELECT id FROM users WHERE email_change = \(address)", logger: logger)
                return try await rows.collect().first?.decode(UUID.self)
            }
            guard let pending else {
                // Nothing pending for that address: the same rate and answer as any other.
                try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
                    try await codes.admitMail(AuthMailer.Kind.emailChange.rawValue, to: address, on: connection)
                }
                return
            }
            try await requestEmailChange(of: pending, to: address, secure: secureEmailChange, redirectTo: redirectTo, resending: true)
            return
        }
        guard type == "signup" else { throw AuthError.validationFailed("Missing one of these types: signup, email_change") }
        let redirect = redirects.resolve(redirectTo)
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            try await codes.admitMail(AuthMailer.Kind.signup.rawValue, to: address, on: connection)
            // Only an unconfirmed account gets one; any other address takes the same time.
            let account = try await account(address, on: connection).flatMap { $0.confirmed ? nil : $0 }
            try await codes.mail(.signup, to: address, user: account?.id, challenge: nil, redirectTo: redirect, on: connection)
        }
    }

    /// What a verified code is: a session, or one side of a secure email change whose other side
    /// is still to be verified.
    enum Verified: Sendable {
        case session(IssuedTokens, UserRecord)
        case awaitingOtherAddress
    }

    /// `POST /verify {"type","email","token"}`: spends the code and signs the account in (an email
    /// change is applied once every mailed side is verified).
    /// - Throws: `AuthError.otpExpired` for a wrong, spent or expired code, or a locked address;
    ///   a wrong code counts towards the lock; `.emailExists` when a changed address was taken meanwhile.
    func verify(code: String, email raw: String, type: String, userAgent: String?) async throws -> Verified {
        let kinds = try Self.kinds(type)
        let address = try Self.address(raw)
        let verified: Verified? = try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            guard let redeemed = try await codes.redeem(code: code, address: address, kinds: kinds, on: connection) else { return nil }
            try await connection.query("DELETE FROM code_failures WHERE address = \(address)", logger: logger)
            guard try await applyEmailChange(redeemed, on: connection) else { return .awaitingOtherAddress }
            let (tokens, user) = try await signIn(redeemed.userID, userAgent: userAgent, on: connection)
            return .session(tokens, user)
        }
        guard let verified else {
            try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
                try await codes.recordFailure(for: address, on: connection)
            }
            throw AuthError.otpExpired
        }
        return verified
    }

    /// What a verified link leads to.
    enum LinkOutcome: Sendable {
        /// Implicit flow: the session, in the redirect's fragment.
        case session(IssuedTokens, UserRecord, redirectTo: String)
        /// PKCE flow: an auth code, in the redirect's query.
        case authCode(String, redirectTo: String)
        /// One side of a secure email change: the other address's link is still to be opened.
        case awaitingOtherAddress(redirectTo: String)
    }

    /// `POST /verify {"type","token_hash"}` and the link's `GET /verify`: spends the link's token.
    /// - Throws: `AuthError.otpExpired` for a wrong, spent or expired token.
    func verify(link token: String, type: String, redirectTo: String?, userAgent: String?) async throws -> LinkOutcome {
        let kinds = try Self.kinds(type)
        return try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            guard let redeemed = try await codes.redeem(link: token, kinds: kinds, on: connection) else { throw AuthError.otpExpired }
            let redirect = redirects.resolve(redirectTo ?? redeemed.redirectTo)
            guard try await applyEmailChange(redeemed, on: connection) else { return .awaitingOtherAddress(redirectTo: redirect) }
            if let challenge = redeemed.challenge {
                try await confirm(redeemed.userID, on: connection)
                let authCode = UUID().uuidString.lowercased()
                try await connection.query(
                    """
                    INSERT INTO flow_states (auth_code_hash, user_id, code_challenge, code_challenge_method, authentication_method)
                    VALUES (\(OpaqueToken.digest(authCode)), \(redeemed.userID), \(challenge.value), \(challenge.method.rawValue), \(redeemed.kind.rawValue))
                    """,
                    logger: logger
                )
                return .authCode(authCode, redirectTo: redirect)
            }
            let (tokens, user) = try await signIn(redeemed.userID, userAgent: userAgent, on: connection)
            return .session(tokens, user, redirectTo: redirect)
        }
    }

    /// `POST /token?grant_type=pkce`: the auth code a PKCE link answered, with the verifier of the
    /// challenge that started the flow. Good once, for `flowLifetime`.
    /// - Throws: `AuthError.flowStateNotFound`, `.badCodeVerifier`.
    func exchange(authCode: String, verifier: String, userAgent: String?) async throws -> (IssuedTokens, UserRecord) {
        let window = Double(flowLifetime.components.seconds)
        let outcome: Result<(IssuedTokens, UserRecord), AuthError> = try await client.withAuthFlowTransaction(logger: logger) {
            [self] connection in
            let rows = try await connection.query(
                """
                DELETE FROM flow_states WHERE auth_code_hash = \(OpaqueToken.digest(authCode))
                RETURNING user_id, code_challenge, code_challenge_method, created_at > clock_timestamp() - \(window) * interval '1 second'
                """,
                logger: logger
            )
            guard let row = try await rows.collect().first else { return .failure(.flowStateNotFound) }
            let (userID, value, method, fresh) = try row.decode((UUID, String, String, Bool).self)
            guard fresh, let method = OneTimeCodes.Challenge.Method(rawValue: method) else { return .failure(.flowStateNotFound) }
            // A wrong verifier spends the code too: it is good for one try.
            guard OneTimeCodes.Challenge(value: value, method: method).isMet(by: verifier) else { return .failure(.badCodeVerifier) }
            return .success(try await signIn(userID, userAgent: userAgent, on: connection))
        }
        return try outcome.get()
    }

    // MARK: Email change

    /// `PUT /user {"email"}`: keeps the new address pending and mails a code and link to it and,
    /// when `secure` (`AUTH_SECURE_EMAIL_CHANGE`), to the current address; the address changes when
    /// every mailed side is verified. The same address again changes nothing.
    /// - Throws: `AuthError.emailExists` for an address another account has,
    ///   `.overEmailSendRateLimit`, `.validationFailed`.
    func requestEmailChange(of userID: UUID, to raw: String, secure: Bool, redirectTo: String?, resending: Bool = false) async throws {
        let newAddress = try Self.address(raw)
        let redirect = redirects.resolve(redirectTo)
        try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            guard let user = try await connection.user(id: userID, forUpdate: true, logger: logger) else { throw AuthError.userNotFound }
            let current = user.email.lowercased()
            guard newAddress != current, !resending || user.emailChange == newAddress else { return }
            let taken = try await connection.query("SELECT 1 FROM users WHERE lower(email) = \(newAddress) AND id <> \(userID)", logger: logger)
            guard try await taken.collect().isEmpty else { throw AuthError.emailExists }
            try await codes.admitMail(AuthMailer.Kind.emailChange.rawValue, to: newAddress, on: connection)
            try await connection.query(
                "UPDATE users SET email_change = \(newAddress), email_change_sent_at = now(), updated_at = now() WHERE id = \(userID)",
                logger: logger
            )
            let change = (from: current, to: newAddress)
            try await codes.mail(.emailChange, to: newAddress, user: userID, challenge: nil, redirectTo: redirect, change: change, on: connection)
            if secure {
                try await codes.mail(
                    .emailChangeCurrent,
                    to: current,
                    user: userID,
                    challenge: nil,
                    redirectTo: redirect,
                    change: change,
                    on: connection
                )
            } else {
                try await connection.query(
                    "DELETE FROM one_time_tokens WHERE user_id = \(userID) AND kind = \(AuthMailer.Kind.emailChangeCurrent.rawValue)",
                    logger: logger
                )
            }
        }
    }

    /// For a redeemed side of an email change: applies the change when no other side is left
    /// (with `auth.user.email-changed.v1`) and answers true, or answers false while the other
    /// address's code is still out. Any other code: true, nothing done.
    private func applyEmailChange(_ redeemed: OneTimeCodes.Redeemed, on connection: PostgresConnection) async throws -> Bool {
        guard redeemed.kind == .emailChange || redeemed.kind == .emailChangeCurrent else { return true }
        let other: AuthMailer.Kind = redeemed.kind == .emailChange ? .emailChangeCurrent : .emailChange
        let waiting = try await connection.query(
            """
            SELECT 1 FROM one_time_tokens WHERE user_id = \(redeemed.userID) AND kind = \(other.rawValue) AND expires_at > clock_timestamp()
            """,
            logger: logger
        )
        guard try await waiting.collect().isEmpty else { return false }
        do {
            let rows = try await connection.query(
                """
                UPDATE users SET email = email_change, email_change = NULL, email_change_sent_at = NULL, email_proven_at = now(), updated_at = now()
                WHERE id = \(redeemed.userID) AND email_change IS NOT NULL
                RETURNING email, updated_at
                """,
                logger: logger
            )
            guard let (email, changedAt) = try await rows.collect().first?.decode((String, Date).self) else { throw AuthError.otpExpired }
            try await connection.query(
                """
                UPDATE identities SET identity_data = jsonb_set(identity_data, '{email}', to_jsonb(\(email)::text)), updated_at = now()
                WHERE user_id = \(redeemed.userID) AND provider = 'email'
                """,
                logger: logger
            )
            let event = EmailChanged(userId: redeemed.userID, changedAt: changedAt)
            try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
            return true
        } catch let error where error.violatedUniqueIndex == "users_email_key" {
            throw AuthError.emailExists
        }
    }

    // MARK: Parts

    /// Confirms the account (its address is proven) and starts a session.
    private func signIn(_ userID: UUID, userAgent: String?, on connection: PostgresConnection) async throws -> (IssuedTokens, UserRecord) {
        try await confirm(userID, on: connection)
        guard let signedIn = try await sessions.signIn(userID, userAgent: userAgent, on: connection) else { throw AuthError.otpExpired }
        return signedIn
    }

    /// Marks the address proven; the first time it is confirmed, with `auth.user.email-confirmed.v1`.
    /// One statement: the address proven, the account confirmed and its email identity verified
    /// (those two only the first time: then it answers when).
    private func confirm(_ userID: UUID, on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            WITH before AS (
                SELECT email_confirmed_at IS NULL AS first FROM users WHERE id = \(userID) FOR UPDATE
            ), marked AS (
                UPDATE users u SET email_proven_at = coalesce(u.email_proven_at, now()),
                    email_confirmed_at = coalesce(u.email_confirmed_at, now()),
                    updated_at = CASE WHEN before.first THEN now() ELSE u.updated_at END
                FROM before WHERE u.id = \(userID)
                RETURNING before.first, u.email_confirmed_at
            ), verified AS (
                UPDATE identities SET identity_data = identity_data || '{"email_verified": true}'::jsonb, updated_at = now()
                WHERE user_id = \(userID) AND provider = 'email' AND (SELECT first FROM marked)
            )
            SELECT email_confirmed_at FROM marked WHERE first
            """,
            logger: logger
        )
        guard let confirmedAt = try await rows.collect().first?.decode(Date.self) else { return }
        let event = EmailConfirmed(userId: userID, confirmedAt: confirmedAt)
        try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
    }

    private func account(_ address: String, on connection: PostgresConnection) async throws -> Account? {
        let rows = try await connection.query(
            "SELECT id, email_confirmed_at IS NOT NULL FROM users WHERE lower(email) = \(address)",
            logger: logger
        )
        return try await rows.collect().first.map { row in
            let (id, confirmed) = try row.decode((UUID, Bool).self)
            return Account(id: id, confirmed: confirmed)
        }
    }

    /// The address as codes are kept under: normalized, lower-case.
    static func address(_ raw: String) throws(AuthError) -> String {
        guard raw.utf8.count <= EmailAddress.maximumBytes, let address = EmailAddress.normalized(raw)?.lowercased() else {
            throw .validationFailed("Unable to validate email address: invalid format")
        }
        return address
    }

    /// The kinds of code a `/verify` type accepts: `email` is any code mailed to the address.
    static func kinds(_ type: String) throws(AuthError) -> [AuthMailer.Kind] {
        switch type {
        case "email": return AuthMailer.Kind.allCases.filter { $0 != .reauthentication }
        case AuthMailer.Kind.emailChange.rawValue: return [.emailChange, .emailChangeCurrent]
        default:
            guard let kind = AuthMailer.Kind(rawValue: type), kind != .emailChangeCurrent, kind != .reauthentication else {
                throw .validationFailed("type must be one of signup, magiclink, recovery, invite, email_change, email")
            }
            return [kind]
        }
    }
}
