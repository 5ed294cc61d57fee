import Foundation
import NIOCore

/// Where uploaded photos and rendered edits are kept. Keys are `{userId}/{id}/{variant}.{ext}`:
/// a name two users can never collide on. The local file system implements it now; an S3 store
/// (MinIO in docker-compose) implements the same protocol when hosts share work.
protocol BlobStore: Sendable {
    /// Stores `bytes` under `key`, replacing what was there; readers see the old or the new blob,
    /// never a part.
    func put(_ key: BlobKey, bytes: [UInt8]) async throws
    /// Streams `body` to `key`, stopping with `BlobError.tooLarge` past `limit` bytes (nothing is
    /// kept then). Returns the byte count.
    func put(_ key: BlobKey, streaming body: some AsyncSequence<ByteBuffer, any Error> & Sendable, limit: Int) async throws -> Int
    /// The blob's bytes, or `nil` when there is none.
    func get(_ key: BlobKey) async throws -> [UInt8]?
    func delete(_ key: BlobKey) async throws
}

enum BlobError: Error, Equatable {
    case tooLarge(limit: Int)
}

/// A blob's key: path segments that are UUIDs or a fixed variant name, so a key can never climb
/// out of its store or be chosen by a client.
struct BlobKey: Sendable, Hashable, CustomStringConvertible {
    let path: String

    private init(path: String) { self.path = path }

    static func upload(user: UUID, upload: UUID, format: String) -> BlobKey {
        BlobKey(path: "\(user.lowercased)/uploads/\(upload.lowercased).\(format)")
    }

    static func edited(user: UUID, edit: UUID, format: String) -> BlobKey {
        BlobKey(path: "\(user.lowercased)/\(edit.lowercased)/edited.\(format == "jpeg" ? "jpg" : format)")
    }

    /// A key read back from a signed media URL or the database: only the shapes above.
    init?(stored path: String) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, UUID(uuidString: String(parts[0])) != nil else { return nil }
        let file = parts[2].split(separator: ".")
        guard file.count == 2, ["jpg", "jpeg", "png", "webp"].contains(file[1]) else { return nil }
        let middleIsID = UUID(uuidString: String(parts[1])) != nil && file[0] == "edited"
        let isUpload = parts[1] == "uploads" && UUID(uuidString: String(file[0])) != nil
        guard middleIsID || isUpload else { return nil }
        self.path = path
    }

    var description: String { path }
}

extension UUID {
    var lowercased: String { uuidString.lowercased() }
}
