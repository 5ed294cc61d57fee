import Foundation

/// The claims of a Splash access token, as GoTrue issues them (Services/Auth/README.md).
///
/// `role` is always `authenticated`; Splash's own role lives in `app_metadata.role`.
package struct AccessTokenClaims: Sendable, Equatable, Codable {
    /// How the user authenticated in this session (`amr`).
    package struct AuthenticationMethod: Sendable, Equatable, Codable {
        package var method: String
        /// Seconds since 1970.
        package var timestamp: Int

        package init(method: String, timestamp: Int) {
            self.method = method
            self.timestamp = timestamp
        }
    }

    package var issuer: String
    /// The user id.
    package var subject: String
    package var audience: String
    /// Seconds since 1970.
    package var expiresAt: Int
    /// Seconds since 1970.
    package var issuedAt: Int
    package var email: String
    package var phone: String
    package var role: String
    package var appMetadata: [String: JSONValue]
    package var userMetadata: [String: JSONValue]
    package var sessionID: String
    package var authenticatorAssuranceLevel: String
    package var authenticationMethods: [AuthenticationMethod]
    package var isAnonymous: Bool

    package init(
        issuer: String,
        subject: String,
        audience: String = "authenticated",
        expiresAt: Int,
        issuedAt: Int,
        email: String,
        phone: String = "",
        role: String = "authenticated",
        appMetadata: [String: JSONValue],
        userMetadata: [String: JSONValue],
        sessionID: String,
        authenticatorAssuranceLevel: String = "aal1",
        authenticationMethods: [AuthenticationMethod],
        isAnonymous: Bool = false
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.email = email
        self.phone = phone
        self.role = role
        self.appMetadata = appMetadata
        self.userMetadata = userMetadata
        self.sessionID = sessionID
        self.authenticatorAssuranceLevel = authenticatorAssuranceLevel
        self.authenticationMethods = authenticationMethods
        self.isAnonymous = isAnonymous
    }

    private enum CodingKeys: String, CodingKey {
        case issuer = "iss"
        case subject = "sub"
        case audience = "aud"
        case expiresAt = "exp"
        case issuedAt = "iat"
        case email, phone, role
        case appMetadata = "app_metadata"
        case userMetadata = "user_metadata"
        case sessionID = "session_id"
        case authenticatorAssuranceLevel = "aal"
        case authenticationMethods = "amr"
        case isAnonymous = "is_anonymous"
    }

    /// The user's Splash role (`app_metadata.role`), `customer` when absent.
    package var splashRole: String {
        appMetadata["role"]?.stringValue ?? "customer"
    }

    /// The user id as a UUID, when it is one.
    package var userID: UUID? {
        UUID(uuidString: subject)
    }
}
