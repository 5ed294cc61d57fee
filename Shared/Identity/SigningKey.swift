import Crypto
import Foundation

/// An ES256 (ECDSA P-256) key that signs access tokens, named by its `kid`.
package struct SigningKey: Sendable {
    package let privateKey: P256.Signing.PrivateKey
    /// The RFC 7638 thumbprint of the public key: stable for a key, different for any other, and
    /// never configured by hand.
    package let id: String

    package init(_ privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.id = VerificationKey(privateKey.publicKey).id
    }

    /// - Throws: `CryptoKitError` when `pem` is not a P-256 private key (SEC 1 or PKCS #8 PEM).
    package init(pem: String) throws {
        self.init(try P256.Signing.PrivateKey(pemRepresentation: pem))
    }

    /// A new random key, for development (`splash keys generate`) and tests.
    package static func generate() -> SigningKey {
        SigningKey(P256.Signing.PrivateKey())
    }

    /// The PKCS #8 PEM of the private key.
    package var pem: String {
        privateKey.pemRepresentation
    }

    package var verificationKey: VerificationKey {
        VerificationKey(privateKey.publicKey)
    }
}

/// The public half of a signing key: what verifiers hold, and what the JWKS endpoint publishes.
package struct VerificationKey: Sendable {
    package let publicKey: P256.Signing.PublicKey
    package let id: String

    package init(_ publicKey: P256.Signing.PublicKey) {
        self.publicKey = publicKey
        let jwk = JSONWebKey(publicKey, id: "")
        // RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace.
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(jwk.x)","y":"\#(jwk.y)"}"#
        self.id = Base64URL.encode(SHA256.hash(data: Data(canonical.utf8)))
    }

    /// The key `jwk` describes, or `nil` when it is not an EC P-256 signing key.
    package init?(_ jwk: JSONWebKey) {
        guard jwk.kty == "EC", jwk.crv == "P-256", jwk.use ?? "sig" == "sig", jwk.alg ?? "ES256" == "ES256",
            let x = Base64URL.decode(jwk.x), let y = Base64URL.decode(jwk.y), x.count == 32, y.count == 32,
            let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + x + y)
        else { return nil }
        self.init(key)
    }

    package var jwk: JSONWebKey {
        JSONWebKey(publicKey, id: id)
    }
}

/// One public key of a JWKS document (RFC 7517), as auth publishes it.
package struct JSONWebKey: Sendable, Equatable, Codable {
    package var kty: String
    package var crv: String
    package var kid: String?
    package var x: String
    package var y: String
    package var alg: String?
    package var use: String?

    init(_ key: P256.Signing.PublicKey, id: String) {
        let raw = key.rawRepresentation
        kty = "EC"
        crv = "P-256"
        kid = id
        x = Base64URL.encode(raw.prefix(32))
        y = Base64URL.encode(raw.suffix(32))
        alg = "ES256"
        use = "sig"
    }
}

/// `{"keys": […]}`: the document at `/auth/v1/.well-known/jwks.json`.
package struct JSONWebKeySet: Sendable, Equatable, Codable {
    package var keys: [JSONWebKey]

    package init(keys: [JSONWebKey]) {
        self.keys = keys
    }

    /// The usable verification keys; keys of other types are ignored.
    package var verificationKeys: [VerificationKey] {
        keys.compactMap { jwk in
            guard let key = VerificationKey(jwk) else { return nil }
            // A published kid that differs from the thumbprint still names the key.
            return jwk.kid.map { key.withID($0) } ?? key
        }
    }
}

extension VerificationKey {
    private init(publicKey: P256.Signing.PublicKey, id: String) {
        self.publicKey = publicKey
        self.id = id
    }

    func withID(_ id: String) -> VerificationKey {
        VerificationKey(publicKey: publicKey, id: id)
    }
}
