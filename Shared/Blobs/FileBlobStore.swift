import Foundation
import NIOCore

/// Blobs as files under a root directory. Writes go to a temporary file in the same directory and
/// are renamed into place, so a reader never sees half a blob and a crash leaves no partial one
/// under the key (temporary files start with a dot, which no key's segment does).
package struct FileBlobStore: InPlaceBlobStore {
    package let root: URL

    package init(root: URL) throws {
        self.root = root
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    package func put(_ key: BlobKey, bytes: [UInt8]) async throws {
        let (file, temporary) = try prepare(key)
        do {
            try Data(bytes).write(to: temporary)
            try replace(file, with: temporary)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    package func put(_ key: BlobKey, streaming body: some AsyncSequence<ByteBuffer, any Error> & Sendable, limit: Int) async throws -> Int {
        let (file, temporary) = try prepare(key)
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        var written = 0
        do {
            let handle = try FileHandle(forWritingTo: temporary)
            defer { try? handle.close() }
            for try await chunk in body {
                written += chunk.readableBytes
                guard written <= limit else { throw BlobError.tooLarge(limit: limit) }
                try handle.write(contentsOf: chunk.readableBytesView)
            }
            try handle.synchronize()
            try replace(file, with: temporary)
            return written
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    package func write(
        _ key: BlobKey,
        at offset: Int,
        streaming body: some AsyncSequence<ByteBuffer, any Error>,
        limit: Int
    ) async throws -> (written: Int, broken: (any Error)?) {
        let file = url(key)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: file.path) {
            guard FileManager.default.createFile(atPath: file.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        }
        let handle = try FileHandle(forUpdating: file)
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(offset))
        var written = 0
        var broken: (any Error)?
        var chunks = body.makeAsyncIterator()
        while true {
            // Only the body's own failure is a break-off; the file's throws.
            let next: ByteBuffer?
            do {
                next = try await chunks.next()
            } catch {
                broken = error
                break
            }
            guard let chunk = next else { break }
            guard written + chunk.readableBytes <= limit else {
                try handle.truncate(atOffset: UInt64(offset))
                throw BlobError.tooLarge(limit: limit)
            }
            try handle.write(contentsOf: chunk.readableBytesView)
            written += chunk.readableBytes
        }
        try handle.synchronize()
        return (written, broken)
    }

    package func get(_ key: BlobKey) async throws -> [UInt8]? {
        let file = url(key)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        return Array(try Data(contentsOf: file))
    }

    package func delete(_ key: BlobKey) async throws {
        let file = url(key)
        if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
    }

    package func get(_ key: BlobKey, range: Range<Int>) async throws -> [UInt8]? {
        let file = url(key)
        guard let handle = FileHandle(forReadingAtPath: file.path) else { return nil }
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(max(range.lowerBound, 0)))
        return Array(try handle.read(upToCount: max(range.count, 0)) ?? Data())
    }

    package func open(_ key: BlobKey) async throws -> BlobStream? {
        let file = url(key)
        guard let size = try await size(of: key), let handle = FileHandle(forReadingAtPath: file.path) else { return nil }
        let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            // Read on demand, 256 KiB at a time.
            let reader = Task {
                defer { try? handle.close() }
                do {
                    while !Task.isCancelled, let data = try handle.read(upToCount: 256 << 10), !data.isEmpty {
                        continuation.yield(ByteBuffer(bytes: data))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in reader.cancel() }
        }
        return BlobStream(size: size, chunks: chunks)
    }

    package func size(of key: BlobKey) async throws -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: url(key).path)[.size] as? NSNumber)?.intValue
    }

    package func list(prefix: String) async throws -> [(key: String, size: Int)] {
        // Only the folder the prefix names is walked (all of the store for a prefix without `/`).
        let folder = prefix.lastIndex(of: "/").map { String(prefix[..<$0]) }
        let start = folder.flatMap { BlobKey($0) }.map { root.appendingPathComponent($0.path) } ?? root
        guard FileManager.default.fileExists(atPath: start.path),
            let walker = FileManager.default.enumerator(at: start, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey])
        else { return [] }
        let rootPath = root.standardizedFileURL.path + "/"
        var found: [(key: String, size: Int)] = []
        for case let file as URL in walker {
            let values = try file.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
            guard values.isRegularFile == true else { continue }
            let key = String(file.standardizedFileURL.path.dropFirst(rootPath.count))
            // Temporary files (a segment starting with a dot) are no blobs.
            guard key.hasPrefix(prefix), BlobKey(key) != nil else { continue }
            found.append((key, values.fileSize ?? 0))
        }
        return found.sorted { $0.key < $1.key }
    }

    /// The file holding the blob under `key` (for readers that take a path, such as libvips).
    package func url(_ key: BlobKey) -> URL { root.appendingPathComponent(key.path) }

    package func localFile(_ key: BlobKey) -> URL? { url(key) }

    /// Moves the blob under `from` to `to`, replacing what was there.
    package func move(_ from: BlobKey, to: BlobKey) async throws {
        let destination = url(to)
        try FileManager.default.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        try replace(destination, with: url(from))
    }

    private func prepare(_ key: BlobKey) throws -> (file: URL, temporary: URL) {
        let file = url(key)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        return (file, file.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).partial"))
    }

    private func replace(_ file: URL, with temporary: URL) throws {
        // rename(2) replaces atomically.
        guard rename(temporary.path, file.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}
