import Blobs
import Foundation
import ServiceKit

/// A storage bucket. `posts` holds the photos of posts (readable by their owner, and by anyone
/// signed in once a post shows them); `avatars` is public.
enum Bucket: String, Sendable, CaseIterable {
    case posts, avatars

    var isPublic: Bool { self == .avatars }

    /// A bucket named in a path: 404 `Bucket not found` for any other name.
    static func named(_ name: Substring) throws -> Bucket {
        guard let bucket = Bucket(rawValue: String(name)) else { throw StorageError.bucketNotFound }
        return bucket
    }
}

/// An object's bucket and name, read from the raw request path: each segment percent-decoded on
/// its own, so `%2F` cannot hide a slash in a name, and every segment a plain name (no `.`, `..`,
/// empty or hidden segment, no control characters) — the rules of `BlobKey`. The first segment is
/// the owner's user id.
struct ObjectPath: Sendable, Hashable, CustomStringConvertible {
    let bucket: Bucket
    /// `{owner id}/…`, as the client wrote it (Swift clients write ids upper-case).
    let name: String
    let owner: UUID

    /// - Throws: 404 for an unknown bucket, 400 `InvalidKey` for a name that breaks the rules.
    init(bucket name: Substring, rawName segments: [Substring]) throws {
        let bucket = try Bucket.named(name)
        var decoded: [String] = []
        for segment in segments {
            guard let plain = segment.removingPercentEncoding else { throw StorageError.invalidKey("The object name is not valid percent-encoding") }
            guard !plain.contains("/"), BlobKey(plain) != nil else {
                throw StorageError.invalidKey(
                    "Invalid key: \(plain.prefix(100)) (names are plain path segments: no '.', '..', empty or hidden segments, no '/' inside one)"
                )
            }
            decoded.append(plain)
        }
        try self.init(bucket: bucket, name: decoded.joined(separator: "/"))
    }

    /// - Throws: 400 `InvalidKey` unless `name` is `{user id}/…` made of plain segments.
    init(bucket: Bucket, name: String) throws {
        let segments = name.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count >= 2, name.utf8.count <= 1_000, BlobKey(name) != nil else {
            throw StorageError.invalidKey("Invalid key: names are {your user id}/{file name}, plain path segments, at most 1,000 bytes")
        }
        guard let owner = UUID(uuidString: String(segments[0])) else {
            throw StorageError.invalidKey("Invalid key: the first folder of a name is its owner's user id")
        }
        self.bucket = bucket
        self.name = name
        self.owner = owner
    }

    /// A name read back from the `objects` table, checked when it was written: only its owner is
    /// read from it. `nil` for a name no upload could have written.
    init?(stored name: String, bucket: Bucket) {
        guard let slash = name.firstIndex(of: "/"), let owner = UUID(uuidString: String(name[..<slash])) else { return nil }
        self.bucket = bucket
        self.name = name
        self.owner = owner
    }

    /// `posts/{name}`: how a post refers to it (`{"objectKey": …}`), and how Storage's answers
    /// name it (`Key`).
    var description: String { "\(bucket.rawValue)/\(name)" }

    /// - Throws: 403 unless `user` owns the path's folder.
    func ownedBy(_ user: UUID) throws -> ObjectPath {
        guard owner == user else {
            throw StorageError.unauthorized("new row violates row-level security policy: objects go under your own user id, \(user.lowercased)/…")
        }
        return self
    }
}
