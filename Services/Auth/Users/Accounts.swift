import Contracts
import EventBus
import Foundation
import Identity
import Logging
import PostgresNIO

/// Sign-up, sign-in and everything a user changes about their account, with the events that
/// follow: each written to the outbox in the transaction of the change it describes.
struct Accounts: Sendable {
    /// What `PUT /user` asks to change; `nil` leaves a field as it is. (A new email is not applied
    /// here: it waits for its confirmation, `CodeFlows.requestEmailChange`.)
    struct Changes: Sendable {
        var password: String?
        /// Merged into `user_metadata`; a key set to `null` is removed.
        var metadata: [String: JSONValue]?
    }

    let client: PostgresClient
    let outbox: Outbox
    let hasher: PasswordHasher
    let passwordPolicy: PasswordPolicy
    let sessions: Sessions
    /// `AUTH_EMAIL_CONFIRM`: an address must be confirmed before a password signs in.
    var requiresConfirmation = false
    let logger: Logger

    /// Creates a confirmed user and signs them in.
    /// - Throws: `AuthError.validationFailed`, `.weakPassword`, `.userAlreadyExists` (the email, in
    ///   any case) or `.usernameTaken`.
    func signUp(email: String, password: String, metadata: [String: JSONValue], userAgent: String?) async throws -> (IssuedTokens, UserRecord) {
        let account = try await NewAccount(email: email, password: password, metadata: metadata, policy: passwordPolicy, hasher: hasher)
        return try await insert(account, role: nil, confirmed: true, signsIn: true, duplicateEmail: .userAlreadyExists) {
            [sessions] user, connection in
            try await sessions.start(for: user, userAgent: userAgent, on: connection)
        }
    }

    /// Creates an unconfirmed user (`AUTH_EMAIL_CONFIRM`), then `then` in the same transaction:
    /// the confirmation mail.
    /// - Throws: as `signUp`.
    func signUpToConfirm(
        email: String,
        password: String,
        metadata: [String: JSONValue],
        then: @escaping @Sendable (UserRecord, PostgresConnection) async throws -> UserRecord
    ) async throws -> UserRecord {
        let account = try await NewAccount(email: email, password: password, metadata: metadata, policy: passwordPolicy, hasher: hasher)
        return try await insert(account, role: nil, confirmed: false, signsIn: false, duplicateEmail: .userAlreadyExists, then: then).0
    }

    /// What an admin (or another Splash service) asks for in `POST /admin/users`.
    struct AdminCreation: Sendable {
        var id: UUID?
        var email: String
        /// An account without one cannot sign in with a password until one is set.
        var password: String?
        var confirmed: Bool
        var metadata: [String: JSONValue]
        var role: UserRole?
    }

    /// Creates a user without signing them in, as `POST /admin/users` does, with the id, role and
    /// confirmation asked for.
    /// - Throws: as `signUp`, but `.emailExists` for a taken email or id.
    func create(_ creation: AdminCreation) async throws -> UserRecord {
        var account = try await NewAccount(
            email: creation.email,
            password: creation.password,
            metadata: creation.metadata,
            policy: passwordPolicy,
            hasher: hasher
        )
        account.id = creation.id ?? account.id
        return try await insert(
            account,
            role: creation.role,
            confirmed: creation.confirmed,
            proven: creation.confirmed,
            signsIn: false,
            duplicateEmail: .emailExists
        ) { _, _ in
            ()
        }.1
    }

    /// A user's row, checked and hashed, before it is written.
    private struct NewAccount: Sendable {
        var id = UUID()
        var email: String
        var passwordHash: String?
        var metadataJSON: String

        init(email: String, password: String?, metadata: [String: JSONValue], policy: PasswordPolicy, hasher: PasswordHasher) async throws {
            guard let email = EmailAddress.normalized(email)?.lowercased() else {
                throw AuthError.validationFailed("Unable to validate email address: invalid format")
            }
            self.email = email
            if let password { try policy.check(password) }
            metadataJSON = try String(decoding: JSONEncoder().encode(try UserMetadata.merge(metadata, into: [:])), as: UTF8.self)
            passwordHash = if let password { try await hasher.hash(password) } else { nil }
        }
    }

    /// An identity of another provider an account is made with (Sign in with Apple).
    struct ProviderIdentity: Sendable {
        var provider: String
        var providerID: String
        var data: [String: JSONValue]
    }

    /// Creates a confirmed account for `identity` (no password, its address proven by the
    /// provider) and signs it in.
    /// - Throws: `AuthError.emailExists` for a taken address.
    func create(for identity: ProviderIdentity, email: String, userAgent: String?) async throws -> (IssuedTokens, UserRecord) {
        let account = try await NewAccount(email: email, password: nil, metadata: [:], policy: passwordPolicy, hasher: hasher)
        return try await insert(
            account,
            role: nil,
            confirmed: true,
            proven: true,
            signsIn: true,
            identity: identity,
            duplicateEmail: .emailExists
        ) { [sessions] user, connection in
            try await sessions.start(for: user, userAgent: userAgent, on: connection)
        }
    }

    /// Writes `account` with its identity (email, or `identity`) and its `auth.user.registered.v1`
    /// event, then `then` in the same transaction (`signsIn`: the account is signed in as it is
    /// made; `proven`: its address is known to be the person's, not only auto-confirmed).
    private func insert<Extra: Sendable>(
        _ account: NewAccount,
        role: UserRole?,
        confirmed: Bool,
        proven: Bool = false,
        signsIn: Bool,
        identity provided: ProviderIdentity? = nil,
        duplicateEmail: AuthError,
        then: @escaping @Sendable (UserRecord, PostgresConnection) async throws -> Extra
    ) async throws -> (Extra, UserRecord) {
        let id = account.id
        let identity =
            provided
            ?? ProviderIdentity(
                provider: "email",
                providerID: id.uuidString.lowercased(),
                data: [
                    "email": .string(account.email), "email_verified": .bool(confirmed), "phone_verified": .bool(false),
                    "sub": .string(id.uuidString.lowercased()),
                ]
            )
        let identityJSON = try String(decoding: JSONEncoder().encode(identity.data), as: UTF8.self)
        do {
            return try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
                try await connection.query(
                    """
                    INSERT INTO users (id, email, encrypted_password, user_metadata, role, email_confirmed_at, email_proven_at, last_sign_in_at)
                    VALUES (\(id), \(account.email), \(account.passwordHash), \(account.metadataJSON)::jsonb, \((role ?? .customer).rawValue),
                            CASE WHEN \(confirmed) THEN now() END, CASE WHEN \(proven) THEN now() END, CASE WHEN \(signsIn) THEN now() END)
                    """,
                    logger: logger
                )
                try await connection.query(
                    """
                    INSERT INTO identities (id, user_id, provider, provider_id, identity_data, last_sign_in_at)
                    VALUES (\(UUID()), \(id), \(identity.provider), \(identity.providerID), \(identityJSON)::jsonb, now())
                    """,
                    logger: logger
                )
                guard let user = try await connection.user(id: id, logger: logger) else { throw AuthError.userNotFound }
                let extra = try await then(user, connection)
                let event = UserRegistered(userId: id, username: user.username, role: user.role, registeredAt: user.createdAt)
                try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
                return (extra, user)
            }
        } catch let error where error.violatedUniqueIndex == "users_email_key" || error.violatedUniqueIndex == "users_pkey" {
            throw duplicateEmail
        } catch let error where error.violatedUniqueIndex == "users_username_key" {
            throw AuthError.usernameTaken
        }
    }

    /// Signs in with email and password. An unknown email and a wrong password fail alike, after
    /// the same bcrypt work.
    /// - Throws: `AuthError.invalidCredentials`.
    func signIn(email: String, password: String, userAgent: String?) async throws -> (IssuedTokens, UserRecord) {
        let found: (UserRecord, String?)? = try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: UserRecord.columns), u.encrypted_password FROM \(unescaped: UserRecord.source)
                WHERE lower(u.email) = lower(\(email.trimmingCharacters(in: .whitespaces)))
                """,
                logger: logger
            )
            guard let row = try await rows.collect().first else { return nil }
            return (try UserRecord(row: row), try row.makeRandomAccess()[18].decode(String?.self))
        }
        guard try await hasher.verify(password, against: found?.1 ?? nil), let userID = found?.0.id else {
            throw AuthError.invalidCredentials
        }
        if requiresConfirmation, found?.0.emailConfirmedAt == nil { throw AuthError.emailNotConfirmed }
        return try await client.withAuthFlowTransaction(logger: logger) { [self] connection in
            try await connection.query(
                """
                UPDATE identities SET last_sign_in_at = now() WHERE user_id = \(userID) AND provider = 'email'
                """,
                logger: logger
            )
            guard let signedIn = try await sessions.signIn(userID, userAgent: userAgent, on: connection) else {
                throw AuthError.invalidCredentials
            }
            return signedIn
        }
    }

    /// Applies `changes` to the signed-in user. Emits `auth.profile.updated.v1` when the username
    /// or the avatar really changed.
    /// - Throws: `AuthError.validationFailed`, `.weakPassword`, `.samePassword`, `.usernameTaken`.
    func update(_ session: AuthenticatedSession, _ changes: Changes) async throws -> UserRecord {
        let userID = session.userID
        if let metadata = changes.metadata {
            // Validated again on the merged document; this catches bad values before any work.
            _ = try UserMetadata.merge(metadata, into: [:])
        }
        var passwordHash: String?
        if let password = changes.password {
            try passwordPolicy.check(password)
            // An account made by an admin may have no password yet: any first one is new.
            let current = try await client.withUserTransaction(user: userID, logger: logger) { [logger] connection in
                try await connection.passwordHash(of: userID, logger: logger)
            }
            guard let current else { throw AuthError.userNotFound }
            if current != nil, try await hasher.verify(password, against: current) { throw AuthError.samePassword }
            passwordHash = try await hasher.hash(password)
        }
        do {
            return try await client.withUserTransaction(user: userID, logger: logger) { [self, passwordHash] connection in
                guard let before = try await connection.user(id: userID, forUpdate: true, logger: logger) else { throw AuthError.userNotFound }
                let metadata =
                    try changes.metadata.map { changes throws(AuthError) in
                        try UserMetadata.merge(changes, into: before.userMetadata)
                    } ?? before.userMetadata
                let metadataJSON = try String(decoding: JSONEncoder().encode(metadata), as: UTF8.self)
                try await connection.query(
                    """
                    UPDATE users SET encrypted_password = coalesce(\(passwordHash), encrypted_password),
                        user_metadata = \(metadataJSON)::jsonb, updated_at = now()
                    WHERE id = \(userID)
                    """,
                    logger: logger
                )
                guard let after = try await connection.user(id: userID, logger: logger) else { throw AuthError.userNotFound }
                var changed: [ProfileUpdated.Field] = []
                if after.username != before.username { changed.append(.username) }
                if after.avatarURL != before.avatarURL { changed.append(.avatarUrl) }
                if !changed.isEmpty {
                    let event = ProfileUpdated(
                        userId: userID,
                        username: after.username,
                        avatarUrl: after.avatarURL,
                        changed: changed,
                        updatedAt: after.updatedAt
                    )
                    try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
                }
                return after
            }
        } catch let error where error.violatedUniqueIndex == "users_username_key" {
            throw AuthError.usernameTaken
        }
    }

    /// Marks the user's onboarding done on `connection`, inside the caller's transaction for that
    /// user; the first time only, emits `auth.user.onboarding-completed.v1`.
    func completeOnboarding(_ session: AuthenticatedSession, on connection: PostgresConnection) async throws -> UserRecord {
        let userID = session.userID
        let rows = try await connection.query(
            """
            UPDATE users SET onboarded = true, updated_at = now() WHERE id = \(userID) AND NOT onboarded RETURNING updated_at
            """,
            logger: logger
        )
        if let completedAt = try await rows.collect().first?.decode(Date.self) {
            let event = OnboardingCompleted(userId: userID, completedAt: completedAt)
            try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
        }
        guard let user = try await connection.user(id: userID, logger: logger) else { throw AuthError.userNotFound }
        return user
    }

    /// Sets the Splash role of user `target`. The caller's role is read from the database, not
    /// from their token, so a demoted admin loses the right at once.
    /// - Throws: `AuthError.notAdmin`, `.userNotFound`.
    func setRole(_ role: UserRole, of target: UUID, by admin: AuthenticatedSession) async throws -> UserRecord {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            try await connection.requireAdmin(admin, logger: logger)
            let updated = try await connection.query(
                """
                UPDATE users SET role = \(role.rawValue), updated_at = now() WHERE id = \(target) RETURNING id
                """,
                logger: logger
            ).collect()
            guard !updated.isEmpty, let user = try await connection.user(id: target, logger: logger) else { throw AuthError.userNotFound }
            return user
        }
    }

    /// A page of every user, newest first, and how many there are: GoTrue's admin list.
    /// - Throws: `AuthError.notAdmin` unless `admin` is an admin now.
    func users(page: Int, perPage: Int, by admin: AuthenticatedSession) async throws -> (users: [UserRecord], total: Int) {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            try await connection.requireAdmin(admin, logger: logger)
            let total = try await connection.query("SELECT count(*) FROM users", logger: logger).collect().first?.decode(Int.self) ?? 0
            let rows = try await connection.query(
                """
                SELECT \(unescaped: UserRecord.columns) FROM \(unescaped: UserRecord.source)
                ORDER BY u.created_at DESC, u.id DESC LIMIT \(perPage) OFFSET \((page - 1) * perPage)
                """,
                logger: logger
            )
            var users: [UserRecord] = []
            for try await row in rows { users.append(try UserRecord(row: row)) }
            return (users, total)
        }
    }

    /// One user, as GoTrue's admin API reads it (the caller was checked: an admin or a service).
    /// - Throws: `AuthError.userNotFound`.
    func user(_ id: UUID) async throws -> UserRecord {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            guard let user = try await connection.user(id: id, logger: logger) else { throw AuthError.userNotFound }
            return user
        }
    }

    /// The newest sign-ups, newest first: username and sign-up time only.
    func recentSignUps(limit: Int) async throws -> [RecentSignUp] {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            let rows = try await connection.query(
                """
                SELECT user_metadata ->> 'username', created_at FROM users ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """,
                logger: logger
            )
            var result: [RecentSignUp] = []
            for try await (username, createdAt) in rows.decode((String?, Date).self) {
                result.append(RecentSignUp(username: username, createdAt: GoTrueTimestamp.format(createdAt)))
            }
            return result
        }
    }

    func userCount() async throws -> Int {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            try await connection.query("SELECT count(*) FROM users", logger: logger).collect().first?.decode(Int.self) ?? 0
        }
    }

    /// - Throws: `AuthError.notAdmin` unless the session's user is an admin now (not when the
    ///   token was issued).
    func requireAdmin(_ session: AuthenticatedSession) async throws {
        try await client.withAuthFlowTransaction(logger: logger) { [logger] connection in
            try await connection.requireAdmin(session, logger: logger)
        }
    }
}

/// One entry of the public list of recent sign-ups: never an email.
struct RecentSignUp: Sendable, Codable, Equatable {
    var username: String?
    var createdAt: String

    private enum CodingKeys: String, CodingKey {
        case username
        case createdAt = "created_at"
    }

    /// `username` is always there, `null` for a user without one, as the document says.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(username, forKey: .username)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

extension PostgresConnection {
    fileprivate func requireAdmin(_ session: AuthenticatedSession, logger: Logger) async throws {
        let role = try await query("SELECT role FROM users WHERE id = \(session.userID)", logger: logger).collect().first?.decode(String.self)
        guard role == UserRole.admin.rawValue else { throw AuthError.notAdmin("User not allowed") }
    }
}
