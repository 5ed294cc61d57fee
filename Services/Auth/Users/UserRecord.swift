import Contracts
import Foundation
import Identity
import PostgresNIO

/// A user as auth stores it, with its email identity.
struct UserRecord: Sendable {
    struct EmailIdentity: Sendable {
        var id: UUID
        var identityData: [String: JSONValue]
        var lastSignInAt: Date?
        var createdAt: Date
        var updatedAt: Date
    }

    var id: UUID
    var email: String
    var role: UserRole
    var onboarded: Bool
    var userMetadata: [String: JSONValue]
    var emailConfirmedAt: Date?
    /// When the last sign-up confirmation mail went (`AUTH_EMAIL_CONFIRM`).
    var confirmationSentAt: Date?
    /// A new address waiting for its confirmation, and when its mail went.
    var emailChange: String?
    var emailChangeSentAt: Date?
    var lastSignInAt: Date?
    var createdAt: Date
    var updatedAt: Date
    var identity: EmailIdentity?

    var username: String? { userMetadata[UserMetadata.usernameKey]?.stringValue }
    var avatarURL: String? { userMetadata[UserMetadata.avatarURLKey]?.stringValue }

    /// `app_metadata`, as tokens and responses carry it. Set by auth only.
    var appMetadata: [String: JSONValue] {
        [
            "provider": .string("email"),
            "providers": .array([.string("email")]),
            "role": .string(role.rawValue),
            "onboarded": .bool(onboarded),
        ]
    }

    /// The columns `init(row:)` reads, for `SELECT … FROM users u LEFT JOIN identities i …`.
    static let columns = """
        u.id, u.email, u.role, u.onboarded, u.user_metadata::text, u.email_confirmed_at, u.last_sign_in_at,
        u.created_at, u.updated_at, i.id, i.identity_data::text, i.last_sign_in_at, i.created_at, i.updated_at,
        u.confirmation_sent_at, u.email_change, u.email_change_sent_at
        """

    /// `FROM` clause joining a user to its email identity.
    static let source = "users u LEFT JOIN identities i ON i.user_id = u.id AND i.provider = 'email'"

    init(row: PostgresRow) throws {
        let (id, email, role, onboarded, metadata, confirmedAt, lastSignInAt, createdAt, updatedAt) =
            try row.decode((UUID, String, String, Bool, String, Date?, Date?, Date, Date).self)
        self.id = id
        self.email = email
        self.role = UserRole(rawValue: role) ?? .customer
        self.onboarded = onboarded
        self.userMetadata = try JSONDecoder().decode([String: JSONValue].self, from: Data(metadata.utf8))
        self.emailConfirmedAt = confirmedAt
        self.lastSignInAt = lastSignInAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        let columns = row.makeRandomAccess()
        self.confirmationSentAt = try columns[14].decode(Date?.self)
        self.emailChange = try columns[15].decode(String?.self)
        self.emailChangeSentAt = try columns[16].decode(Date?.self)
        if let identityID = try columns[9].decode(UUID?.self) {
            let data = try columns[10].decode(String.self)
            identity = EmailIdentity(
                id: identityID,
                identityData: try JSONDecoder().decode([String: JSONValue].self, from: Data(data.utf8)),
                lastSignInAt: try columns[11].decode(Date?.self),
                createdAt: try columns[12].decode(Date.self),
                updatedAt: try columns[13].decode(Date.self)
            )
        }
    }
}

extension PostgresConnection {
    /// The user `id` with its identity, as the transaction's row-level security lets it be seen.
    func user(id: UUID, forUpdate: Bool = false, logger: Logger) async throws -> UserRecord? {
        let rows = try await query(
            """
            SELECT \(unescaped: UserRecord.columns) FROM \(unescaped: UserRecord.source)
            WHERE u.id = \(id) \(unescaped: forUpdate ? "FOR UPDATE OF u" : "")
            """,
            logger: logger
        )
        for try await row in rows {
            return try UserRecord(row: row)
        }
        return nil
    }
}
