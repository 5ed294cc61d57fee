import Foundation
import NIOCore

/// Where uploaded photos, rendered edits and stored objects are kept: one store the services
/// share, each under keys of its own shape (edit-render's start with the owner's id, social's with
/// its bucket). The local file system implements it now; an S3-compatible store implements the
/// same protocol when hosts share work.
package protocol BlobStore: Sendable {
    /// Stores `bytes` under `key`, replacing what was there; readers see the old or the new blob,
    /// never a part.
    func put(_ key: BlobKey, bytes: [UInt8]) async throws
    /// Streams `body` to `key`, stopping with `BlobError.tooLarge` past `limit` bytes (nothing is
    /// kept then). Returns the byte count.
    func put(_ key: BlobKey, streaming body: some AsyncSequence<ByteBuffer, any Error> & Sendable, limit: Int) async throws -> Int
    /// The blob's bytes, or `nil` when there is none.
    func get(_ key: BlobKey) async throws -> [UInt8]?
    /// Removes the blob; removing one that does not exist is not an error.
    func delete(_ key: BlobKey) async throws
    /// The bytes `range` of the blob (clamped to its end), or `nil` when there is none.
    func get(_ key: BlobKey, range: Range<Int>) async throws -> [UInt8]?
    /// The blob as it arrives, chunk by chunk, with its size: for answers that pass it on without
    /// holding it whole. `nil` when there is none.
    func open(_ key: BlobKey) async throws -> BlobStream?
    /// The blob's size in bytes, or `nil` when there is none.
    func size(of key: BlobKey) async throws -> Int?
    /// Every blob whose key starts with `prefix`, in key order, with its size.
    func list(prefix: String) async throws -> [(key: String, size: Int)]
    /// Puts the blob under `from` under `to` instead (replacing what `to` held).
    func move(_ from: BlobKey, to: BlobKey) async throws
    /// The local file holding the blob, for readers that take a path (libvips); `nil` when the
    /// store keeps blobs elsewhere (read them with `get`).
    func localFile(_ key: BlobKey) -> URL?
}

/// A store that writes into a blob in place (files): a resumable upload's chunks land in one blob
/// as they arrive, and nothing is copied when the last one does.
package protocol InPlaceBlobStore: BlobStore {
    /// Writes `body` into the blob under `key` from `offset` — the blob cut to `offset` first, made
    /// when there is none — and syncs it. Past `limit` bytes it stops with `BlobError.tooLarge`
    /// and cuts the blob back to `offset`. When the body breaks off, what arrived is kept.
    /// - Returns: the bytes written, and the error that broke the body off, if one did.
    func write(
        _ key: BlobKey,
        at offset: Int,
        streaming body: some AsyncSequence<ByteBuffer, any Error>,
        limit: Int
    ) async throws -> (written: Int, broken: (any Error)?)
}

/// A store that makes a blob of other blobs on its own side (S3: a multipart upload whose parts are
/// copied from them), so a resumable upload's parts become one blob without passing through the
/// service. Every part but the last must be at least `minimumPartSize` bytes.
package protocol ComposingBlobStore: BlobStore {
    var minimumPartSize: Int { get }
    /// Writes under `key` the blobs `parts` one after another (they stay as they are); the blob
    /// appears whole or not at all.
    func compose(_ key: BlobKey, from parts: [BlobKey]) async throws
}

/// A blob being read: its size, and its bytes as they arrive (read once).
package struct BlobStream: Sendable {
    package var size: Int
    package var chunks: any AsyncSequence<ByteBuffer, any Error> & Sendable

    package init(size: Int, chunks: any AsyncSequence<ByteBuffer, any Error> & Sendable) {
        self.size = size
        self.chunks = chunks
    }
}

package enum BlobError: Error, Equatable {
    case tooLarge(limit: Int)
}

/// A blob's key: a relative path whose every segment is a plain name, so a key can never climb
/// out of its store, name a folder, or collide with the store's own temporary files.
///
/// Segments are 1–255 bytes of printable text without `/`, `\` or control characters, and do not
/// start with a dot (so `.` and `..` are refused, as are hidden files); the whole key is at most
/// 1,024 bytes.
package struct BlobKey: Sendable, Hashable, CustomStringConvertible {
    package let path: String

    /// `nil` when `path` is not a safe key.
    package init?(_ path: String) {
        guard (1...1_024).contains(path.utf8.count) else { return nil }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            guard (1...255).contains(segment.utf8.count), segment.first != ".",
                !segment.unicodeScalars.contains(where: { $0 == "\\" || $0.properties.generalCategory == .control })
            else { return nil }
        }
        self.path = path
    }

    /// The key `segments` make, each checked.
    package init?(segments: [String]) {
        guard !segments.isEmpty, !segments.contains(where: { $0.contains("/") }) else { return nil }
        self.init(segments.joined(separator: "/"))
    }

    package var segments: [Substring] { path.split(separator: "/") }

    package var description: String { path }
}
