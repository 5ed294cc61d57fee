import Crypto
import Foundation
import Identity
import _CryptoExtras

/// What Sign in with Apple is checked against (`AUTH_APPLE_*`).
struct AppleSettings: Sendable, Equatable {
    /// Apple's key set (`https://appleid.apple.com/auth/keys`; `http://` only on loopback).
    var keysURL: URL
    var issuer: String
    /// The apps' bundle ids a token's `aud` may name; none: Apple sign-in is off.
    var clientIDs: [String]

    var isEnabled: Bool { !clientIDs.isEmpty }
}

/// An identity token from Sign in with Apple, checked: an RS256 JWT signed by one of Apple's keys,
/// from Apple (`iss`), for one of the apps (`aud`), not expired, and bound to the app's nonce.
struct AppleIdentityToken: Sendable, Equatable {
    /// Apple's stable id of the person for this team.
    var subject: String
    var email: String?
    var emailVerified: Bool
    var isPrivateEmail: Bool

    /// The token's parts, before any check.
    struct Unverified: Sendable {
        var keyID: String
        var signingInput: Data
        var signature: Data
        var claims: [String: JSONValue]
    }

    /// Splits `token` into its parts.
    /// - Throws: `AuthError.badIDToken` for anything that is not an RS256 JWT with a `kid`.
    static func parse(_ token: String) throws(AuthError) -> Unverified {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 16_384, parts.count == 3,
            let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]),
            let header = try? JSONDecoder().decode([String: JSONValue].self, from: headerData),
            let claims = try? JSONDecoder().decode([String: JSONValue].self, from: claimsData)
        else { throw .badIDToken("not a JWT") }
        guard header["alg"]?.stringValue == "RS256" else { throw .badIDToken("the token is not signed with RS256") }
        guard let keyID = header["kid"]?.stringValue else { throw .badIDToken("the token names no key (kid)") }
        return Unverified(
            keyID: keyID,
            signingInput: Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)),
            signature: signature,
            claims: claims
        )
    }

    /// Checks `unverified` with `key` and `settings`; `rawNonce` is the nonce the app made (the
    /// token carries its SHA-256, hex). A nonce must be on both sides or on neither.
    /// - Throws: `AuthError.badIDToken` naming what is wrong.
    static func verify(
        _ unverified: Unverified,
        key: _RSA.Signing.PublicKey,
        settings: AppleSettings,
        rawNonce: String?,
        now: Date = Date()
    ) throws(AuthError) -> AppleIdentityToken {
        let signature = _RSA.Signing.RSASignature(rawRepresentation: unverified.signature)
        guard key.isValidSignature(signature, for: unverified.signingInput, padding: .insecurePKCS1v1_5) else {
            throw .badIDToken("the signature does not check against Apple's key")
        }
        let claims = unverified.claims
        guard claims["iss"]?.stringValue == settings.issuer else { throw .badIDToken("the token is not from \(settings.issuer)") }
        let audiences: [String] =
            switch claims["aud"] {
            case .string(let one)?: [one]
            case .array(let many)?: many.compactMap(\.stringValue)
            default: []
            }
        guard audiences.contains(where: settings.clientIDs.contains) else { throw .badIDToken("the token is for another app (aud)") }
        guard let expiry = claims["exp"]?.numberValue, Date(timeIntervalSince1970: expiry) > now.addingTimeInterval(-30) else {
            throw .badIDToken("the token has expired")
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw .badIDToken("the token names nobody (sub)")
        }
        switch (rawNonce, claims["nonce"]?.stringValue) {
        case (nil, nil): break
        case (let raw?, let hashed?):
            let expected = SHA256.hash(data: Data(raw.utf8)).map { String(format: "%02x", $0) }.joined()
            guard expected == hashed.lowercased() else { throw .badIDToken("Nonces mismatch") }
        default:
            throw .badIDToken("Passed nonce and nonce in id_token should either both exist or not.")
        }
        return AppleIdentityToken(
            subject: subject,
            email: claims["email"]?.stringValue.flatMap { EmailAddress.normalized($0)?.lowercased() },
            emailVerified: claims["email_verified"].map(Self.flag) ?? false,
            isPrivateEmail: claims["is_private_email"].map(Self.flag) ?? false
        )
    }

    /// Apple writes its booleans as JSON booleans or as the strings "true" and "false".
    private static func flag(_ value: JSONValue) -> Bool {
        switch value {
        case .bool(let flag): flag
        case .string(let text): text == "true"
        default: false
        }
    }
}
