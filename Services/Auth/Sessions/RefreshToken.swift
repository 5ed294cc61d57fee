import Crypto
import Foundation
import Identity

/// An opaque refresh token: 256 random bits, base64url (43 characters). Only its SHA-256 is stored.
struct RefreshToken: Sendable, Equatable {
    let value: String

    static func generate() -> RefreshToken {
        RefreshToken(value: OpaqueToken.random())
    }

    /// A token as a client presents it, or `nil` when it cannot be one of ours.
    init?(presented: String) {
        guard presented.utf8.count == 43, let bytes = Base64URL.decode(presented), bytes.count == 32 else { return nil }
        self.value = presented
    }

    private init(value: String) {
        self.value = value
    }

    /// What the database stores and looks the token up by.
    var hash: Data {
        OpaqueToken.digest(value)
    }

    /// Seals `tokens` (what this token was exchanged for) under a key only this token's holder can
    /// derive, so a replay within the reuse interval can be answered with the same tokens.
    func seal(_ tokens: IssuedTokens) throws -> Data {
        let plain = try JSONEncoder().encode(tokens)
        guard let combined = try AES.GCM.seal(plain, using: sealingKey).combined else {
            throw CryptoKitError.incorrectParameterSize
        }
        return combined
    }

    /// Opens what `seal` produced.
    /// - Throws: `CryptoKitError` when `sealed` was not sealed with this token.
    func open(_ sealed: Data) throws -> IssuedTokens {
        let plain = try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: sealingKey)
        return try JSONDecoder().decode(IssuedTokens.self, from: plain)
    }

    private var sealingKey: SymmetricKey {
        SymmetricKey(data: SHA256.hash(data: Data("splash.refresh-token.successor:\(value)".utf8)))
    }
}

/// The tokens one sign-in or refresh handed out.
struct IssuedTokens: Sendable, Equatable, Codable {
    var accessToken: String
    var refreshToken: String
    /// Seconds since 1970 when the access token expires.
    var expiresAt: Int
    /// Seconds the access token is valid for, as of when these tokens are handed out: the full
    /// lifetime when just issued, what is left of it when a replay gets them again.
    var expiresIn: Int
}
