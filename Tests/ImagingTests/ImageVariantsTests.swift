import Blobs
import Foundation
import NIOCore
import Testing

@testable import Imaging

/// Variants kept beside their image, and gone with it — also when the image is deleted while one
/// of them is being rendered.
@Suite("Image variants") struct ImageVariantsTests {
    static let photo = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/photos/Aqua.jpg")

    @Test func aVariantRenderedWhileItsImageIsDeletedIsNotLeftBehind() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("variants-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let files = try FileBlobStore(root: root)
        let source = BlobKey("posts/\(UUID().uuidString.lowercased())/v1")!
        try await files.put(source, bytes: Array(try Data(contentsOf: Self.photo)))
        let renderer = try Renderer(threads: 1)
        let tile = ImageTransform(width: 200, height: 200, format: .webp)

        // Kept while the image is there, and answered from the store the second time.
        let variants = ImageVariants(blobs: files, renderer: renderer, maxBytes: 25 << 20)
        let first = try #require(try await variants.variant(of: source, tile))
        #expect(try await variants.kept(of: source, tile) != nil)
        #expect(try await variants.variant(of: source, tile) == first)

        // The image's whole deletion runs after the render's listing and before its variant is
        // kept: its sweeps of the variants miss the new one.
        let racing = ImageVariants(blobs: DeletedDuringRender(files: files, source: source), renderer: renderer, maxBytes: 25 << 20)
        let medium = ImageTransform(width: 640, format: .webp)
        #expect(try await racing.variant(of: source, medium) == nil)
        #expect(try await files.list(prefix: source.path).isEmpty)
        try await renderer.shutdown()
    }
}

/// The file store, where the image at `source` is deleted (with its variants, as Storage and
/// edit-render delete one) just before a variant of it is put.
private struct DeletedDuringRender: BlobStore {
    let files: FileBlobStore
    let source: BlobKey

    func put(_ key: BlobKey, bytes: [UInt8]) async throws {
        if key.path.hasPrefix(source.path + "-variants/") { try await ImageVariants.deleteImage(source, in: files) }
        try await files.put(key, bytes: bytes)
    }
    func put(_ key: BlobKey, streaming body: some AsyncSequence<ByteBuffer, any Error> & Sendable, limit: Int) async throws -> Int {
        try await files.put(key, streaming: body, limit: limit)
    }
    func get(_ key: BlobKey) async throws -> [UInt8]? { try await files.get(key) }
    func delete(_ key: BlobKey) async throws { try await files.delete(key) }
    func get(_ key: BlobKey, range: Range<Int>) async throws -> [UInt8]? { try await files.get(key, range: range) }
    func open(_ key: BlobKey) async throws -> BlobStream? { try await files.open(key) }
    func size(of key: BlobKey) async throws -> Int? { try await files.size(of: key) }
    func list(prefix: String) async throws -> [(key: String, size: Int)] { try await files.list(prefix: prefix) }
    func move(_ from: BlobKey, to: BlobKey) async throws { try await files.move(from, to: to) }
    func localFile(_ key: BlobKey) -> URL? { files.localFile(key) }
}
