import Foundation
import Identity

/// An access token like auth's for `user`, signed with `key`: what tests of services that verify
/// tokens (the gateway, photo-catalog) present. A negative `expiresIn` makes an expired one.
package func testAccessToken(
    user: UUID = UUID(),
    role: String = "customer",
    key: SigningKey,
    issuer: String,
    expiresIn: TimeInterval = 3_600
) throws -> String {
    let now = Int(Date().timeIntervalSince1970)
    let claims = AccessTokenClaims(
        issuer: issuer,
        subject: user.uuidString.lowercased(),
        audience: "authenticated",
        expiresAt: now + Int(expiresIn),
        issuedAt: now,
        email: "someone@example.com",
        phone: "",
        role: "authenticated",
        appMetadata: ["provider": .string("email"), "role": .string(role)],
        userMetadata: [:],
        sessionID: UUID().uuidString.lowercased(),
        authenticatorAssuranceLevel: "aal1",
        authenticationMethods: [],
        isAnonymous: false
    )
    return try AccessTokenSigner(key: key).sign(claims)
}
