import Blobs
import Foundation
import NIOCore
import Testing

@Suite("Blob keys")
struct BlobKeyTests {
    @Test(arguments: ["a", "posts/6f1c/photo.jpg", "avatars/u/ünïcode name.png", String(repeating: "x", count: 255)])
    func plainPathsAreKeys(path: String) {
        #expect(BlobKey(path)?.path == path)
    }

    @Test(arguments: [
        "", "/abs", "a//b", "a/", "../x", "a/../b", "a/./b", ".hidden", "a/.partial", "a\\b", "a/b\u{0}c", "a\nb",
        String(repeating: "x", count: 256), String(repeating: "a/", count: 600) + "a",
    ])
    func pathsThatCouldEscapeOrHideAreRefused(path: String) {
        #expect(BlobKey(path) == nil)
    }

    @Test func segmentsCannotSmuggleASlash() {
        #expect(BlobKey(segments: ["posts", "a/b"]) == nil)
        #expect(BlobKey(segments: ["posts", "u", "a.jpg"])?.path == "posts/u/a.jpg")
    }
}

@Suite("Signed links")
struct LinkSignerTests {
    let links = MediaLinks(secret: Array(repeating: 7, count: 32), lifetime: .seconds(60), publicBase: "https://s.test")

    @Test func aSignedMediaLinkVerifiesUntilItExpires() throws {
        let key = BlobKey.edited(user: UUID(), edit: UUID(), format: "jpeg")
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let signed = links.sign(key, now: now)
        let query = try #require(URLComponents(string: signed.url)?.queryItems)
        let expires = query.first { $0.name == "expires" }?.value
        let signature = query.first { $0.name == "signature" }?.value
        #expect(try links.verify(path: key.path, expires: expires, signature: signature, now: now) == key)
        #expect(throws: LinkRefusal.expired) {
            try links.verify(path: key.path, expires: expires, signature: signature, now: now.addingTimeInterval(61))
        }
        #expect(throws: LinkRefusal.badSignature) {
            try links.verify(path: key.path, expires: String(Int(expires!)! + 1), signature: signature, now: now)
        }
        let other = BlobKey.edited(user: UUID(), edit: UUID(), format: "jpeg")
        #expect(throws: LinkRefusal.badSignature) { try links.verify(path: other.path, expires: expires, signature: signature, now: now) }
        #expect(throws: LinkRefusal.malformed) { try links.verify(path: "posts/x/y.jpg", expires: expires, signature: signature, now: now) }
    }

    @Test func aSignatureForOneNameIsWorthNothingForAnother() {
        let signer = LinkSigner(secret: Array(repeating: 1, count: 32))
        let signature = signer.signature("storage:posts/u/a.jpg", expires: 2_000_000_000)
        #expect(throws: LinkRefusal.badSignature) { try signer.verify("u/e/edited.jpg", expires: 2_000_000_000, signature: signature) }
        #expect(throws: LinkRefusal.badSignature) {
            try LinkSigner(secret: Array(repeating: 2, count: 32)).verify("storage:posts/u/a.jpg", expires: 2_000_000_000, signature: signature)
        }
    }
}

@Suite("File blob store")
struct FileBlobStoreTests {
    @Test func blobsArePutReadMovedAndDeleted() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try FileBlobStore(root: root)
        let key = try #require(BlobKey("posts/u/a.jpg"))
        try await store.put(key, bytes: [1, 2, 3])
        #expect(try await store.get(key) == [1, 2, 3])
        let moved = try #require(BlobKey("posts/u/b.jpg"))
        try await store.move(key, to: moved)
        #expect(try await store.get(key) == nil)
        #expect(try await store.get(moved) == [1, 2, 3])
        try await store.delete(moved)
        try await store.delete(moved)
        #expect(try await store.get(moved) == nil)
    }

    @Test func aStreamPastItsLimitLeavesNothing() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try FileBlobStore(root: root)
        let key = try #require(BlobKey("posts/u/big.jpg"))
        let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            for _ in 0..<4 { continuation.yield(ByteBuffer(bytes: [UInt8](repeating: 9, count: 1_000))) }
            continuation.finish()
        }
        await #expect(throws: BlobError.tooLarge(limit: 2_500)) { _ = try await store.put(key, streaming: chunks, limit: 2_500) }
        #expect(try await store.get(key) == nil)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("posts/u").path)
        #expect(leftovers.isEmpty)
    }
}

@Suite("File blob store reads")
struct FileBlobStoreReadTests {
    @Test func rangesSizesAndListingsAsTheS3StoreAnswersThem() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try FileBlobStore(root: root)
        let content = (0..<1_000).map { UInt8($0 % 251) }
        try await store.put(BlobKey("posts/a/one.jpg")!, bytes: content)
        try await store.put(BlobKey("posts/b/two.jpg")!, bytes: [1, 2])
        try await store.put(BlobKey("avatars/a.png")!, bytes: [3])
        #expect(try await store.get(BlobKey("posts/a/one.jpg")!, range: 10..<20) == Array(content[10..<20]))
        #expect(try await store.get(BlobKey("posts/a/one.jpg")!, range: 995..<2_000) == Array(content[995...]), "clamped to the end")
        #expect(try await store.get(BlobKey("posts/none.jpg")!, range: 0..<10) == nil)
        #expect(try await store.size(of: BlobKey("posts/a/one.jpg")!) == 1_000)
        #expect(try await store.size(of: BlobKey("posts/none.jpg")!) == nil)
        let opened = try #require(try await store.open(BlobKey("posts/a/one.jpg")!))
        var streamed: [UInt8] = []
        for try await chunk in opened.chunks { streamed += chunk.readableBytesView }
        #expect(opened.size == 1_000 && streamed == content)
        #expect(try await store.open(BlobKey("posts/none.jpg")!) == nil)
        let listed = try await store.list(prefix: "posts/")
        #expect(listed.map(\.key) == ["posts/a/one.jpg", "posts/b/two.jpg"] && listed.map(\.size) == [1_000, 2])
        // A prefix within a folder, and a folder that does not exist: only what starts with it.
        #expect(try await store.list(prefix: "posts/a/").map(\.key) == ["posts/a/one.jpg"])
        #expect(try await store.list(prefix: "posts/b/tw").map(\.key) == ["posts/b/two.jpg"])
        #expect(try await store.list(prefix: "nobody/").isEmpty)
        #expect(try await store.list(prefix: "../").isEmpty)
    }
}
