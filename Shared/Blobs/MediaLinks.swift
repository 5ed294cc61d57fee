import Crypto
import Foundation
import ServiceKit
import Synchronization

/// Why a signed link is refused.
package enum LinkRefusal: Error, Equatable {
    case malformed, expired, badSignature
}

/// The one way Splash signs a link to a private blob: HMAC-SHA256 over what the link names and its
/// expiry (unix seconds), in hex. Each kind of link signs its own kind of name (`MediaLinks` a
/// blob key, social's storage links `storage:<bucket>/<name>`), so a signature made for one kind
/// is worth nothing as another.
package struct LinkSigner: Sendable {
    private let key: SymmetricKey
    private let made = MadeSignatures()

    package init(secret: [UInt8]) {
        key = SymmetricKey(data: secret)
    }

    /// The signature of a link to `name` that stops working at `expires`. Links' expiries are
    /// rounded up to a bucket, so a feed signs the same objects for every reader until the bucket
    /// turns: signatures made are remembered (a few thousand), not computed again.
    package func signature(_ name: String, expires: Int) -> String {
        made.signature(of: name, expires: expires) { computed(name, expires: expires) }
    }

    private func computed(_ name: String, expires: Int) -> String {
        HMAC<SHA256>.authenticationCode(for: Array("\(name)\n\(expires)".utf8), using: key).hexEncoded
    }

    /// - Throws: `.badSignature` when `given` is not the signature of `name` and `expires`
    ///   (compared in constant time), `.expired` when it is but `expires` has passed.
    package func verify(_ name: String, expires: Int, signature given: String, now: Date = Date()) throws(LinkRefusal) {
        // Computed, never looked up: what a request names does not fill the signatures made.
        let expected = Array(computed(name, expires: expires).utf8)
        let actual = Array(given.utf8)
        guard expected.count == actual.count, zip(expected, actual).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else { throw .badSignature }
        guard Double(expires) > now.timeIntervalSince1970 else { throw .expired }
    }
}

/// edit-render's media links: `<public base>/v1/media/<key>?expires=<unix>&signature=<hex>`, served
/// by edit-render (`GET /v1/media/…`) and handed out by it and by social (a liked or posted edit).
/// The URL is the capability: it is given only to those who may see the blob, stops working at
/// `expires`, and changing any part of it breaks the signature.
package struct MediaLinks: Sendable {
    private let signer: LinkSigner
    package let lifetime: Duration
    /// `https://splash.example` (the gateway), without a trailing slash.
    package let publicBase: String
    /// Makes a link straight to the blob store instead (a presigned S3 GET, `S3_PRESIGN`): the
    /// blob's key and the link's expiry (unix seconds) in, the URL out.
    package var presigner: (@Sendable (_ blob: BlobKey, _ expires: Int) -> String)?

    package init(secret: [UInt8], lifetime: Duration, publicBase: String) {
        signer = LinkSigner(secret: secret)
        self.lifetime = lifetime
        self.publicBase = publicBase
    }

    package struct SignedLink: Sendable, Equatable {
        package var url: String
        package var expiresAt: Date
    }

    package func sign(_ blob: BlobKey, now: Date = Date()) -> SignedLink {
        sign(blob, expires: Int(now.timeIntervalSince1970) + Int(lifetime.components.seconds))
    }

    /// A link that stops working at `expires` (unix seconds): for callers that round expiries so
    /// a link stays the same for a while (and the answers holding it keep their entity tag).
    package func sign(_ blob: BlobKey, expires: Int) -> SignedLink {
        let url =
            presigner?(blob, expires)
            ?? "\(publicBase)/v1/media/\(blob.path)?expires=\(expires)&signature=\(signer.signature(blob.path, expires: expires))"
        return SignedLink(url: url, expiresAt: Date(timeIntervalSince1970: TimeInterval(expires)))
    }

    /// The blob a media request may read.
    /// - Throws: `LinkRefusal` for a URL that is not one of these links, or has expired.
    package func verify(path: String, expires: String?, signature given: String?, now: Date = Date()) throws(LinkRefusal) -> BlobKey {
        guard let blob = BlobKey(mediaPath: path), let expires, let expiry = Int(expires), let given else { throw .malformed }
        try signer.verify(blob.path, expires: expiry, signature: given, now: now)
        return blob
    }
}

/// The keys of edit-render's blobs: what its media links may name.
extension BlobKey {
    /// A user's uploaded photo: `{userId}/uploads/{uploadId}.{format}`.
    package static func upload(user: UUID, upload: UUID, format: String) -> BlobKey {
        BlobKey("\(user.lowercased)/uploads/\(upload.lowercased).\(format)")!
    }

    /// A rendered edit: `{userId}/{editId}/edited.{jpg|webp}`.
    package static func edited(user: UUID, edit: UUID, format: String) -> BlobKey {
        BlobKey("\(user.lowercased)/\(edit.lowercased)/edited.\(format == "jpeg" ? "jpg" : format)")!
    }

    /// A key read back from a media link or edit-render's database: only the two shapes above.
    package init?(mediaPath path: String) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, UUID(uuidString: String(parts[0])) != nil else { return nil }
        let file = parts[2].split(separator: ".")
        guard file.count == 2, ["jpg", "jpeg", "png", "webp", "heif", "avif"].contains(file[1]) else { return nil }
        let middleIsID = UUID(uuidString: String(parts[1])) != nil && file[0] == "edited"
        let isUpload = parts[1] == "uploads" && UUID(uuidString: String(file[0])) != nil
        guard middleIsID || isUpload else { return nil }
        self.init(path)
    }
}

/// The link signatures a process made lately, by what they sign; forgotten all at once when there
/// are `capacity` of them (the expiry bucket has turned, or the objects are many).
private final class MadeSignatures: Sendable {
    private struct Signed: Hashable {
        var name: String
        var expires: Int
    }

    private static let capacity = 4_096
    private let signatures = Mutex<[Signed: String]>([:])

    func signature(of name: String, expires: Int, making make: () -> String) -> String {
        let signed = Signed(name: name, expires: expires)
        if let known = signatures.withLock({ $0[signed] }) { return known }
        let signature = make()
        signatures.withLock { signatures in
            if signatures.count >= Self.capacity { signatures.removeAll(keepingCapacity: true) }
            signatures[signed] = signature
        }
        return signature
    }
}
