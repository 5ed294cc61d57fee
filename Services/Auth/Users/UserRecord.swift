import Contracts
import Foundation
import Identity
import PostgresNIO

/// A user as auth stores it, with its email identity and any other (Apple's).
struct UserRecord: Sendable {
    /// An identity of another provider, as GoTrue lists it.
    struct LinkedIdentity: Sendable, Decodable {
        var id: UUID
        var provider: String
        var providerID: String
        var identityData: [String: JSONValue]
        var lastSignInAt: Double?
        var createdAt: Double
        var updatedAt: Double

        private enum CodingKeys: String, CodingKey {
            case id, provider
            case providerID = "provider_id"
            case identityData = "identity_data"
            case lastSignInAt = "last_sign_in_at"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }
    }

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
    var linkedIdentities: [LinkedIdentity] = []

    var username: String? { userMetadata[UserMetadata.usernameKey]?.stringValue }
    var avatarURL: String? { userMetadata[UserMetadata.avatarURLKey]?.stringValue }

    /// `app_metadata`, as tokens and responses carry it. Set by auth only.
    var appMetadata: [String: JSONValue] {
        let providers = (identity == nil ? [] : ["email"]) + linkedIdentities.map(\.provider)
        return [
            "provider": .string(providers.first ?? "email"),
            "providers": .array(providers.map(JSONValue.string)),
            "role": .string(role.rawValue),
            "onboarded": .bool(onboarded),
        ]
    }

    /// The columns `init(row:)` reads, for `SELECT … FROM users u LEFT JOIN identities i …`.
    static let columns = """
        u.id, u.email, u.role, u.onboarded, u.user_metadata::text, u.email_confirmed_at, u.last_sign_in_at,
        u.created_at, u.updated_at, i.id, i.identity_data::text, i.last_sign_in_at, i.created_at, i.updated_at,
        u.confirmation_sent_at, u.email_change, u.email_change_sent_at,
        (SELECT coalesce(json_agg(json_build_object(
            'id', x.id, 'provider', x.provider, 'provider_id', x.provider_id, 'identity_data', x.identity_data,
            'last_sign_in_at', extract(epoch FROM x.last_sign_in_at), 'created_at', extract(epoch FROM x.created_at),
            'updated_at', extract(epoch FROM x.updated_at)) ORDER BY x.created_at), '[]')::text
         FROM identities x WHERE x.user_id = u.id AND x.provider <> 'email')
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
        self.linkedIdentities = try JSONDecoder().decode([LinkedIdentity].self, from: Data(try columns[17].decode(String.self).utf8))
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

    /// User `id`'s bcrypt hash: `nil` when there is no such user (as the transaction sees it),
    /// `.some(nil)` for an account without a password.
    func passwordHash(of id: UUID, logger: Logger) async throws -> String?? {
        try await query("SELECT encrypted_password FROM users WHERE id = \(id)", logger: logger).collect().first?.decode(String?.self)
    }
}
