import Crypto
import Foundation
import Identity

/// The opaque secrets auth hands out — refresh tokens, mailed links' tokens — and how they are
/// kept: 256 random bits in base64url (43 characters), stored only as their SHA-256.
enum OpaqueToken {
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// What the database keeps of `text`.
    static func digest(_ text: String) -> Data {
        Data(SHA256.hash(data: Data(text.utf8)))
    }
}
