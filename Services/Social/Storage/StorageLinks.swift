import Blobs
import Foundation
import Imaging
import ServiceKit

/// Signed links to storage objects: `/object/sign/{bucket}/{name}?token=<expires>.<signature>`, the
/// token signing `storage:{bucket}/{name}` and its expiry with `LinkSigner`. The expiry is rounded
/// up to a multiple of `bucket`, so the same object signed twice within one bucket gets the same
/// link, and caches (the app's, a CDN's) hit.
struct StorageLinks: Sendable {
    let signer: LinkSigner
    let bucket: Duration
    /// The gateway's public base URL, for absolute links (feeds, posts).
    let publicBase: String

    /// The longest a client may ask a link to last.
    static let maxLifetime = 7 * 86_400

    init(secret: [UInt8], bucket: Duration, publicBase: String) {
        signer = LinkSigner(secret: secret)
        self.bucket = bucket
        self.publicBase = publicBase
    }

    struct Signed: Sendable, Equatable {
        /// Relative to the storage URL (`/object/sign/…`), as Supabase answers.
        var path: String
        var expiresAt: Date

        func absolute(_ publicBase: String) -> String { "\(publicBase)/storage/v1\(path)" }
    }

    /// `seconds` from `now`, rounded up to the bucket.
    func expiry(lifetime seconds: Int, now: Date = Date()) -> Int {
        let step = max(1, Int(bucket.components.seconds))
        let wanted = Int(now.timeIntervalSince1970) + seconds
        return (wanted + step - 1) / step * step
    }

    func sign(_ object: ObjectPath, lifetime seconds: Int, now: Date = Date()) -> Signed {
        sign(object, expires: expiry(lifetime: seconds, now: now))
    }

    /// A link that stops working at `expires` (unix seconds).
    func sign(_ object: ObjectPath, expires: Int) -> Signed {
        let token = "\(expires).\(signer.signature(Self.name(object), expires: expires))"
        return Signed(
            path: "/object/sign/\(object.bucket.rawValue)/\(Self.encoded(object.name))?token=\(token)",
            expiresAt: Date(timeIntervalSince1970: TimeInterval(expires))
        )
    }

    /// - Throws: `LinkRefusal` unless `token` is a live signature of `object`.
    func verify(_ object: ObjectPath, token: String?, now: Date = Date()) throws(LinkRefusal) {
        guard let token, let dot = token.firstIndex(of: "."), let expires = Int(token[..<dot]) else { throw .malformed }
        try signer.verify(Self.name(object), expires: expires, signature: String(token[token.index(after: dot)...]), now: now)
    }

    private static func name(_ object: ObjectPath) -> String { "storage:\(object.description)" }

    // MARK: Signed render links

    /// What a signed render link shows: one version of the object, transformed one way.
    struct RenderGrant: Sendable, Equatable {
        var version: String
        var asked: TransformRequest
    }

    /// `/render/image/sign/{bucket}/{name}?token=<expires>.<version>.<transform>.<signature>`: a
    /// link to a sized copy of one version of `object`; what it shows never changes, so it may be
    /// cached for good. The expiry is rounded up to the bucket, as other links'.
    func signRender(_ object: StoredObject, _ asked: TransformRequest, lifetime seconds: Int, now: Date = Date()) -> Signed {
        signRender(object.path, version: object.version, asked, expires: expiry(lifetime: seconds, now: now))
    }

    /// A render link to `version` of `object` that stops working at `expires` (unix seconds).
    func signRender(_ object: ObjectPath, version: String, _ asked: TransformRequest, expires: Int) -> Signed {
        let named = Self.renderName(object, version: version, asked.signed)
        let token = "\(expires).\(version).\(asked.signed).\(signer.signature(named, expires: expires))"
        return Signed(
            path: "/render/image/sign/\(object.bucket.rawValue)/\(Self.encoded(object.name))?token=\(token)",
            expiresAt: Date(timeIntervalSince1970: TimeInterval(expires))
        )
    }

    /// - Throws: `LinkRefusal` unless `token` is a live signed render token for `object`.
    func verifyRender(_ object: ObjectPath, token: String?, now: Date = Date()) throws(LinkRefusal) -> RenderGrant {
        let parts = token?.split(separator: ".", omittingEmptySubsequences: false) ?? []
        guard parts.count == 4, let expires = Int(parts[0]), let asked = TransformRequest(signed: parts[2]) else { throw .malformed }
        let version = String(parts[1])
        try signer.verify(Self.renderName(object, version: version, String(parts[2])), expires: expires, signature: String(parts[3]), now: now)
        return RenderGrant(version: version, asked: asked)
    }

    private static func renderName(_ object: ObjectPath, version: String, _ transform: String) -> String {
        "storage-render:\(object.description):\(version):\(transform)"
    }

    // MARK: Signed uploads

    /// How long a signed upload URL lasts, as Supabase's: long enough for a background upload.
    static let uploadLifetime = 2 * 3_600

    /// What a signed upload token lets its holder do: write one object, replacing it or not.
    struct UploadGrant: Sendable, Equatable {
        var upsert: Bool
        var expires: Int
    }

    /// `/object/upload/sign/{bucket}/{name}?token=<expires>.<0|1>.<signature>`: a token that lets
    /// anyone holding it write `object` (replacing it when `upsert`) until it expires, without a
    /// session. The signature covers the object and the upsert flag, so it is worth nothing for
    /// another name or to replace what it was not signed to replace.
    func signUpload(_ object: ObjectPath, upsert: Bool, now: Date = Date()) -> (url: String, token: String) {
        let expires = Int(now.timeIntervalSince1970) + Self.uploadLifetime
        let token = "\(expires).\(upsert ? 1 : 0).\(signer.signature(Self.uploadName(object, upsert: upsert), expires: expires))"
        return ("/object/upload/sign/\(object.bucket.rawValue)/\(Self.encoded(object.name))?token=\(token)", token)
    }

    /// - Throws: `LinkRefusal` unless `token` is a live signed upload token for `object`.
    func verifyUpload(_ object: ObjectPath, token: String?, now: Date = Date()) throws(LinkRefusal) -> UploadGrant {
        let parts = token?.split(separator: ".", omittingEmptySubsequences: false) ?? []
        guard parts.count == 3, let expires = Int(parts[0]), parts[1] == "0" || parts[1] == "1" else { throw .malformed }
        let upsert = parts[1] == "1"
        try signer.verify(Self.uploadName(object, upsert: upsert), expires: expires, signature: String(parts[2]), now: now)
        return UploadGrant(upsert: upsert, expires: expires)
    }

    private static func uploadName(_ object: ObjectPath, upsert: Bool) -> String {
        "storage-upload:\(upsert ? "upsert" : "create"):\(object.description)"
    }

    /// The name as a URL path: each segment percent-encoded (most names need none).
    static func encoded(_ name: String) -> String {
        let plain = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x2E
                || byte == 0x5F || byte == 0x7E || byte == 0x2F
        }
        guard !plain else { return name }
        return name.split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? String($0) }
            .joined(separator: "/")
    }
}
