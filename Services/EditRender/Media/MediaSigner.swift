import Crypto
import ServiceKit
import Foundation

/// Expiring, HMAC-SHA256-signed URLs for private blobs: `/v1/media/<key>?expires=<unix>&signature=<hex>`.
/// The URL is the capability: it is handed only to the blob's owner, and stops working at
/// `expires`; changing any part of it breaks the signature.
struct MediaSigner: Sendable {
    let key: SymmetricKey
    let lifetime: Duration
    /// `https://splash.example` (the gateway), without a trailing slash.
    let publicBase: String

    init(secret: [UInt8], lifetime: Duration, publicBase: String) {
        key = SymmetricKey(data: secret)
        self.lifetime = lifetime
        self.publicBase = publicBase
    }

    struct SignedURL: Sendable, Equatable {
        var url: String
        var expiresAt: Date
    }

    func sign(_ blob: BlobKey, now: Date = Date()) -> SignedURL {
        let expires = Int(now.timeIntervalSince1970) + Int(lifetime.components.seconds)
        return SignedURL(url: "\(publicBase)/v1/media/\(blob.path)?expires=\(expires)&signature=\(signature(blob.path, expires))", expiresAt: Date(timeIntervalSince1970: TimeInterval(expires)))
    }

    enum Refusal: Error, Equatable { case malformed, expired, badSignature }

    /// The blob a media request may read.
    /// - Throws: `Refusal` for a URL that is not one this service signed, or has expired.
    func verify(path: String, expires: String?, signature given: String?, now: Date = Date()) throws(Refusal) -> BlobKey {
        guard let blob = BlobKey(stored: path), let expires, let expiry = Int(expires), let given else { throw .malformed }
        // Constant-time comparison of the whole signature.
        let expected = Array(signature(path, expiry).utf8), actual = Array(given.utf8)
        guard expected.count == actual.count, zip(expected, actual).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else { throw .badSignature }
        guard Double(expiry) > now.timeIntervalSince1970 else { throw .expired }
        return blob
    }

    private func signature(_ path: String, _ expires: Int) -> String {
        HMAC<SHA256>.authenticationCode(for: Array("\(path)\n\(expires)".utf8), using: key).hexEncoded
    }
}
