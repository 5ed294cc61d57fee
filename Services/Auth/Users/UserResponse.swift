import Contracts
import Foundation
import Hummingbird
import Identity

/// RFC 3339 timestamps in UTC with microseconds, as GoTrue writes them (`2025-07-11T18:18:45.537123Z`).
enum GoTrueTimestamp {
    static func format(_ date: Date) -> String {
        RFC3339.format(date, fractionalDigits: 6)
    }
}

/// The User object of the GoTrue protocol.
struct UserResponse: ResponseEncodable {
    var user: UserRecord

    private enum Keys: String, CodingKey {
        case id, aud, role, email, phone, identities
        case appMetadata = "app_metadata"
        case userMetadata = "user_metadata"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case emailConfirmedAt = "email_confirmed_at"
        case confirmationSentAt = "confirmation_sent_at"
        case newEmail = "new_email"
        case emailChangeSentAt = "email_change_sent_at"
        case confirmedAt = "confirmed_at"
        case lastSignInAt = "last_sign_in_at"
        case isAnonymous = "is_anonymous"
    }

    private enum IdentityKeys: String, CodingKey {
        case identityID = "identity_id"
        case id
        case userID = "user_id"
        case identityData = "identity_data"
        case provider, email
        case lastSignInAt = "last_sign_in_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        let id = user.id.uuidString.lowercased()
        try container.encode(id, forKey: .id)
        try container.encode("authenticated", forKey: .aud)
        try container.encode("authenticated", forKey: .role)
        try container.encode(user.email, forKey: .email)
        try container.encode("", forKey: .phone)
        try container.encode(user.appMetadata, forKey: .appMetadata)
        try container.encode(user.userMetadata, forKey: .userMetadata)
        var identities = container.nestedUnkeyedContainer(forKey: .identities)
        if let identity = user.identity {
            var entry = identities.nestedContainer(keyedBy: IdentityKeys.self)
            try entry.encode(identity.id.uuidString.lowercased(), forKey: .identityID)
            try entry.encode(id, forKey: .id)
            try entry.encode(id, forKey: .userID)
            try entry.encode(identity.identityData, forKey: .identityData)
            try entry.encode("email", forKey: .provider)
            try entry.encode(user.email, forKey: .email)
            try entry.encodeIfPresent(identity.lastSignInAt.map(GoTrueTimestamp.format), forKey: .lastSignInAt)
            try entry.encode(GoTrueTimestamp.format(identity.createdAt), forKey: .createdAt)
            try entry.encode(GoTrueTimestamp.format(identity.updatedAt), forKey: .updatedAt)
        }
        for linked in user.linkedIdentities {
            var entry = identities.nestedContainer(keyedBy: IdentityKeys.self)
            try entry.encode(linked.id.uuidString.lowercased(), forKey: .identityID)
            try entry.encode(linked.providerID, forKey: .id)
            try entry.encode(id, forKey: .userID)
            try entry.encode(linked.identityData, forKey: .identityData)
            try entry.encode(linked.provider, forKey: .provider)
            try entry.encodeIfPresent(linked.identityData["email"]?.stringValue, forKey: .email)
            let date = { (seconds: Double) in GoTrueTimestamp.format(Date(timeIntervalSince1970: seconds)) }
            try entry.encodeIfPresent(linked.lastSignInAt.map(date), forKey: .lastSignInAt)
            try entry.encode(date(linked.createdAt), forKey: .createdAt)
            try entry.encode(date(linked.updatedAt), forKey: .updatedAt)
        }
        try container.encode(GoTrueTimestamp.format(user.createdAt), forKey: .createdAt)
        try container.encode(GoTrueTimestamp.format(user.updatedAt), forKey: .updatedAt)
        try container.encodeIfPresent(user.emailConfirmedAt.map(GoTrueTimestamp.format), forKey: .emailConfirmedAt)
        try container.encodeIfPresent(user.emailConfirmedAt.map(GoTrueTimestamp.format), forKey: .confirmedAt)
        try container.encodeIfPresent(user.confirmationSentAt.map(GoTrueTimestamp.format), forKey: .confirmationSentAt)
        try container.encodeIfPresent(user.emailChange, forKey: .newEmail)
        try container.encodeIfPresent(user.emailChangeSentAt.map(GoTrueTimestamp.format), forKey: .emailChangeSentAt)
        try container.encodeIfPresent(user.lastSignInAt.map(GoTrueTimestamp.format), forKey: .lastSignInAt)
        try container.encode(false, forKey: .isAnonymous)
    }
}

/// The Session object: all six fields are required by supabase-swift's decoder.
struct SessionResponse: ResponseEncodable {
    var tokens: IssuedTokens
    var user: UserRecord

    private enum Keys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case expiresAt = "expires_at"
        case refreshToken = "refresh_token"
        case user
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(tokens.accessToken, forKey: .accessToken)
        try container.encode("bearer", forKey: .tokenType)
        try container.encode(tokens.expiresIn, forKey: .expiresIn)
        try container.encode(tokens.expiresAt, forKey: .expiresAt)
        try container.encode(tokens.refreshToken, forKey: .refreshToken)
        try container.encode(UserResponse(user: user), forKey: .user)
    }
}
