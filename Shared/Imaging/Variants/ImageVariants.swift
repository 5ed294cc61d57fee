import Blobs
import Foundation
import Synchronization

/// Sized copies of stored images (Storage's image transformations, edit-render's media links with a
/// size). A variant is rendered once per image version and transform — requests that ask for it
/// meanwhile wait for that one render — and kept in the blob store beside the image's blob,
/// `{blob key}-variants/{transform}`, so `deleteImage` drops them with it; a new
/// version has a new blob key and so new variants.
package final class ImageVariants: Sendable {
    /// The most variants kept of one image: anyone may ask a public image for any size, and past
    /// these a new one is answered but not stored, so asking cannot fill the store.
    package static let keptPerImage = 24

    private let blobs: any BlobStore
    private let renderer: Renderer
    private let limits: SourceLimits
    private let rendered: @Sendable () -> Void
    private let flights = Mutex<[BlobKey: Task<[UInt8], any Error>]>([:])

    /// - Parameter rendered: called once per render (a metric's counter).
    package init(blobs: any BlobStore, renderer: Renderer, maxBytes: Int, rendered: @escaping @Sendable () -> Void = {}) {
        self.blobs = blobs
        self.renderer = renderer
        limits = SourceLimits(maxBytes: maxBytes)
        self.rendered = rendered
    }

    /// Where the variant `transform` describes is kept, if it is (to link to it in the store).
    package func kept(of source: BlobKey, _ transform: ImageTransform) async throws -> BlobKey? {
        let key = Self.key(of: source, transform)
        return try await blobs.size(of: key) == nil ? nil : key
    }

    /// The bytes of the variant of the image at `source` that `transform` describes: kept, or
    /// rendered now (once, however many ask meanwhile).
    /// - Returns: `nil` when the image's blob is gone (replaced or deleted meanwhile).
    /// - Throws: `ImagingError` when the image cannot be rendered.
    package func variant(of source: BlobKey, _ transform: ImageTransform) async throws -> [UInt8]? {
        let key = Self.key(of: source, transform)
        if let kept = try await blobs.get(key) { return kept }
        let task = flights.withLock { flights in
            if let running = flights[key] { return running }
            let task = Task { () throws -> [UInt8] in
                // Taken out when done, under the lock it was put in with.
                defer { _ = self.flights.withLock { $0.removeValue(forKey: key) } }
                // Another replica, or a request just finished, may have kept it meanwhile.
                if let kept = try await blobs.get(key) { return kept }
                guard let original = try await blobs.get(source) else { throw SourceGone() }
                let image = try await renderer.transform(original, transform, limits: limits)
                rendered()
                if try await blobs.list(prefix: Self.prefix(of: source)).count < Self.keptPerImage {
                    try await blobs.put(key, bytes: image.bytes)
                    // The image deleted while it rendered: the deletion's sweeps of its variants
                    // may both have run before this one was kept, so it goes here. (Deleted
                    // after this look, the deletion's last sweep finds it: `deleteImage`.)
                    if try await blobs.size(of: source) == nil {
                        try await blobs.delete(key)
                        throw SourceGone()
                    }
                }
                return image.bytes
            }
            flights[key] = task
            return task
        }
        do {
            return try await task.value
        } catch is SourceGone {
            return nil
        }
    }

    private struct SourceGone: Error {}

    /// Deletes the image at `source` with its variants: the variants first (a crash between leaves
    /// the image, whose next deletion takes both), then the image, then any variant a render kept
    /// meanwhile (a render that finds the image gone removes its own).
    package static func deleteImage(_ source: BlobKey, in blobs: any BlobStore) async throws {
        try await deleteVariants(of: source, in: blobs)
        try await blobs.delete(source)
        try await deleteVariants(of: source, in: blobs)
    }

    private static func deleteVariants(of source: BlobKey, in blobs: any BlobStore) async throws {
        for variant in try await blobs.list(prefix: prefix(of: source)) {
            if let key = BlobKey(variant.key) { try await blobs.delete(key) }
        }
    }

    /// The variant's strong entity tag: one key names one rendering, forever (FNV-1a of the key,
    /// the same in every process).
    package static func etag(of source: BlobKey, _ transform: ImageTransform) -> String {
        let hash = key(of: source, transform).path.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        return "\"\(String(hash, radix: 16))\""
    }

    /// `{blob key}-variants/w200-h200-cover-q80.webp` (`w0`/`h0` where a side is left out).
    static func key(of source: BlobKey, _ transform: ImageTransform) -> BlobKey {
        let name =
            "w\(transform.width ?? 0)-h\(transform.height ?? 0)-\(transform.resize.rawValue)-q\(transform.quality).\(transform.format.rawValue)"
        return BlobKey("\(source.path)-variants/\(name)")!
    }

    /// Where the variants of `source` are kept.
    static func prefix(of source: BlobKey) -> String { "\(source.path)-variants/" }
}
