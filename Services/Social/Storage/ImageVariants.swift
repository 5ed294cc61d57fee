import Blobs
import Crypto
import Foundation
import Imaging
import Metrics
import ServiceKit
import Synchronization

/// Sized copies of storage objects (Storage's image transformations). A variant is rendered once
/// per object version and transform — requests that ask for it meanwhile wait for that one render
/// — and kept in the blob store beside the version's blob, `{blob key}-variants/{transform}`, so
/// deleting the blob (`ObjectStore.deleteBlob`) deletes its variants; a new version (an upsert)
/// has a new blob key and so new variants.
final class ImageVariants: Sendable {
    private let blobs: any BlobStore
    private let renderer: Renderer
    private let limits: SourceLimits
    private let renders: Counter
    private let flights = Mutex<[BlobKey: Task<[UInt8], any Error>]>([:])

    init(blobs: any BlobStore, renderer: Renderer, maxBytes: Int, metrics factory: any MetricsFactory) {
        self.blobs = blobs
        self.renderer = renderer
        limits = SourceLimits(maxBytes: maxBytes)
        renders = Counter(label: "storage_image_variants_rendered_total", factory: factory)
    }

    /// The bytes of the variant of `object` that `transform` describes: kept, or rendered now
    /// (once, however many ask meanwhile).
    /// - Returns: `nil` when the object's blob is gone (it was replaced or deleted meanwhile).
    /// - Throws: `ImagingError` when the object cannot be rendered.
    func variant(of object: StoredObject, _ transform: ImageTransform) async throws -> [UInt8]? {
        let key = Self.key(of: object.blobKey, transform)
        if let kept = try await blobs.get(key) { return kept }
        return try await rendered(object.blobKey, transform, into: key)
    }

    /// The variant's strong entity tag: one key names one rendering, forever.
    static func etag(of blob: BlobKey, _ transform: ImageTransform) -> String {
        "\"\(SHA256.hash(data: Array(key(of: blob, transform).path.utf8)).hexEncoded.prefix(32))\""
    }

    /// Renders the variant, or waits for the render another request started.
    private func rendered(_ source: BlobKey, _ transform: ImageTransform, into key: BlobKey) async throws -> [UInt8]? {
        let task = flights.withLock { flights in
            if let running = flights[key] { return running }
            let task = Task { () throws -> [UInt8] in
                // Taken out when done, under the lock it was put in with.
                defer { _ = self.flights.withLock { $0.removeValue(forKey: key) } }
                // Another replica, or a request just finished, may have kept it meanwhile.
                if let kept = try await blobs.get(key) { return kept }
                guard let original = try await blobs.get(source) else { throw VariantSourceGone() }
                let image = try await renderer.transform(original, transform, limits: limits)
                renders.increment()
                // Anyone may ask a public image for any size: past a few dozen variants of one
                // version, a new one is answered but not kept, so asking cannot fill the store.
                if try await blobs.list(prefix: Self.prefix(of: source)).count < Self.keptPerVersion {
                    try await blobs.put(key, bytes: image.bytes)
                }
                return image.bytes
            }
            flights[key] = task
            return task
        }
        do {
            return try await task.value
        } catch is VariantSourceGone {
            return nil
        }
    }

    private struct VariantSourceGone: Error {}

    /// The most variants kept of one version of an object.
    static let keptPerVersion = 24

    /// `{blob key}-variants/w200-h200-cover-q80.webp` (`w0`/`h0` where a side is left out).
    static func key(of blob: BlobKey, _ transform: ImageTransform) -> BlobKey {
        let name =
            "w\(transform.width ?? 0)-h\(transform.height ?? 0)-\(transform.resize.rawValue)-q\(transform.quality).\(transform.format.rawValue)"
        return BlobKey("\(blob.path)-variants/\(name)")!
    }

    /// Where the variants of `blob` are kept (deleted with it).
    static func prefix(of blob: BlobKey) -> String { "\(blob.path)-variants/" }
}
