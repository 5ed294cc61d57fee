import Crypto
import Foundation

/// Why an access token was refused.
package enum AccessTokenError: Error, Sendable, Equatable {
    /// Not three base64url parts of JSON.
    case malformed
    /// Any `alg` but ES256 (`none` and HMAC included).
    case unsupportedAlgorithm(String)
    /// The `kid` names no key this verifier holds.
    case unknownKey(String?)
    case badSignature
    case expired
    case wrongAudience
    case wrongIssuer
    /// There are no keys to verify with: auth's key set has not been fetched (auth unreachable).
    /// Says nothing about the token, so it is no reason to sign the user out.
    case keysUnavailable
    /// The token is valid, but its user's account has been deleted since it was issued.
    case userDeleted
}

/// Signs access tokens with the first configured key; the JWS is `header.claims.signature` with an
/// ES256 header naming the key's `kid`.
package struct AccessTokenSigner: Sendable {
    package let key: SigningKey
    private let encodedHeader: String

    package init(key: SigningKey) {
        self.key = key
        let header = #"{"alg":"ES256","kid":"\#(key.id)","typ":"JWT"}"#
        self.encodedHeader = Base64URL.encode(Data(header.utf8))
    }

    /// - Throws: `EncodingError` (not expected for these claims) or `CryptoKitError`.
    package func sign(_ claims: AccessTokenClaims) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput = encodedHeader + "." + Base64URL.encode(try encoder.encode(claims))
        let signature = try key.privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// Verifies access tokens locally against a set of public keys: signature (ES256 only, by `kid`),
/// expiry, audience and, when configured, issuer. Holds no state beyond the keys, so one value
/// is shared by every request and verification never suspends.
package struct AccessTokenVerifier: Sendable {
    private let keys: [String: P256.Signing.PublicKey]
    private let issuer: String?
    private let audience: String
    private let leeway: Int

    /// - Parameters:
    ///   - keys: every key whose tokens are accepted (during a rotation, the new and the old).
    ///   - issuer: the required `iss`, or `nil` to accept any.
    ///   - leeway: clock skew tolerated on `exp`, in seconds.
    package init(keys: [VerificationKey], issuer: String?, audience: String = "authenticated", leeway: Int = 0) {
        self.keys = Dictionary(keys.map { ($0.id, $0.publicKey) }, uniquingKeysWith: { first, _ in first })
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
    }

    /// The claims of `token` when it is valid at `now`.
    /// - Throws: `AccessTokenError` saying why it is not.
    package func verify(_ token: String, now: Date = Date()) throws(AccessTokenError) -> AccessTokenClaims {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Base64URL.decode(Substring(parts[0])),
            let claimsData = Base64URL.decode(Substring(parts[1])),
            let signatureData = Base64URL.decode(Substring(parts[2])),
            let header = try? JSONDecoder().decode(Header.self, from: headerData)
        else { throw .malformed }
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm(header.alg) }
        guard let kid = header.kid, let key = keys[kid] else { throw .unknownKey(header.kid) }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData) else { throw .badSignature }
        let signingInput = token.utf8.prefix(parts[0].count + 1 + parts[1].count)
        guard key.isValidSignature(signature, for: Data(signingInput)) else { throw .badSignature }
        guard let claims = try? JSONDecoder().decode(AccessTokenClaims.self, from: claimsData) else { throw .malformed }
        guard isCurrent(claims, now: now) else { throw .expired }
        guard claims.audience == audience else { throw .wrongAudience }
        if let issuer, claims.issuer != issuer { throw .wrongIssuer }
        return claims
    }

    /// Whether claims this verifier accepted are still current at `now` (their `exp`, with the
    /// leeway): checked again each time a cache hands them out.
    package func isCurrent(_ claims: AccessTokenClaims, now: Date = Date()) -> Bool {
        Double(claims.expiresAt + leeway) > now.timeIntervalSince1970
    }

    /// Whether it accepts exactly the tokens `other` accepts: the same keys under the same ids,
    /// the same issuer, audience and leeway.
    package func acceptsTheSameTokens(as other: AccessTokenVerifier) -> Bool {
        issuer == other.issuer && audience == other.audience && leeway == other.leeway && keys.count == other.keys.count
            && keys.allSatisfy { id, key in other.keys[id]?.rawRepresentation == key.rawRepresentation }
    }

    private struct Header: Decodable {
        var alg: String
        var kid: String?
    }
}
