import AsyncHTTPClient
import Blobs
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Blobs as objects of one S3 bucket (AWS, MinIO, or any S3-protocol server). An object up to
/// the multipart threshold is one PUT; a larger one is a multipart upload of threshold-sized parts,
/// visible only once completed and aborted on any failure, so a reader never sees half a blob.
package struct S3BlobStore: ComposingBlobStore {
    package let client: S3Client

    /// - Parameter http: a client made with `httpConfiguration` (its connections are not retried
    ///   behind the store's back, so an unreachable server costs one attempt, not a timeout).
    package init(settings: S3Settings, http: HTTPClient, logger: Logger) {
        client = S3Client(settings: settings, http: http, logger: logger)
    }

    /// What the store's HTTP client should be: connecting bounded by 5 s and not retried inside the
    /// client (the store retries whole requests with backoff, a bounded number of times), no
    /// redirects, bodies as they are.
    package static var httpConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        return configuration
    }

    private var partSize: Int { client.settings.multipartThreshold }

    package func put(_ key: BlobKey, bytes: [UInt8]) async throws {
        if bytes.count <= partSize {
            try await putObject(key, ByteBuffer(bytes: bytes))
            return
        }
        let upload = try await MultipartUpload(client: client, key: key.path)
        do {
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + partSize, bytes.count)
                try await upload.add(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
            }
            try await upload.complete()
        } catch {
            await upload.abort()
            throw error
        }
    }

    package func put(_ key: BlobKey, streaming body: some AsyncSequence<ByteBuffer, any Error> & Sendable, limit: Int) async throws -> Int {
        var pending = ByteBuffer()
        var upload: MultipartUpload?
        var written = 0
        do {
            for try await chunk in body {
                written += chunk.readableBytes
                guard written <= limit else { throw BlobError.tooLarge(limit: limit) }
                var chunk = chunk
                pending.writeBuffer(&chunk)
                // A full part goes out as soon as there is one more byte after it: the last part
                // may then be any size, the others are all the part size.
                while pending.readableBytes > partSize {
                    if upload == nil { upload = try await MultipartUpload(client: client, key: key.path) }
                    try await upload!.add(pending.readSlice(length: partSize)!)
                    pending.discardReadBytes()
                }
            }
            if let upload {
                try await upload.add(pending)
                try await upload.complete()
            } else {
                try await putObject(key, pending)
            }
            return written
        } catch {
            await upload?.abort()
            throw error
        }
    }

    package func get(_ key: BlobKey) async throws -> [UInt8]? {
        let answer = try await client.send(.GET, key: key.path, accepting: [200, 404], operation: "GetObject", maxAnswer: 1 << 30)
        return answer.status == 404 ? nil : Array(buffer: answer.body)
    }

    package func get(_ key: BlobKey, range: Range<Int>) async throws -> [UInt8]? {
        guard !range.isEmpty else { return try await size(of: key) == nil ? nil : [] }
        let answer = try await client.send(
            .GET,
            key: key.path,
            headers: [("range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")],
            accepting: [200, 206, 404, 416],
            operation: "GetObject",
            maxAnswer: max(range.count + 1, 64 << 10)
        )
        switch answer.status {
        case 404: return nil
        case 416: return []
        default: return Array(buffer: answer.body)
        }
    }

    /// A streamed GetObject: the request is retried until its answer begins; the body then arrives
    /// as the server sends it.
    package func open(_ key: BlobKey) async throws -> BlobStream? {
        guard let response = try await client.stream(.GET, key: key.path, operation: "GetObject") else { return nil }
        let size = response.headers.first(name: "content-length").flatMap(Int.init) ?? 0
        return BlobStream(size: size, chunks: response.body)
    }

    package func size(of key: BlobKey) async throws -> Int? {
        let answer = try await client.send(.HEAD, key: key.path, accepting: [200, 404], operation: "HeadObject")
        return answer.status == 404 ? nil : answer.headers.first(name: "content-length").flatMap(Int.init)
    }

    package func delete(_ key: BlobKey) async throws {
        _ = try await client.send(.DELETE, key: key.path, accepting: [200, 204, 404], operation: "DeleteObject")
    }

    /// ListObjectsV2, page after page (S3 answers at most 1,000 keys a page).
    package func list(prefix: String) async throws -> [(key: String, size: Int)] {
        var found: [(key: String, size: Int)] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let answer = try await client.send(.GET, key: nil, query: query, operation: "ListObjectsV2", maxAnswer: 16 << 20)
            let xml = String(buffer: answer.body)
            for entry in XMLText.blocks("Contents", in: xml) {
                guard let key = XMLText.all("Key", in: entry).first else { continue }
                found.append((key, XMLText.all("Size", in: entry).first.flatMap(Int.init) ?? 0))
            }
            token = XMLText.first("IsTruncated", in: xml) == "true" ? XMLText.first("NextContinuationToken", in: xml) : nil
        } while token != nil
        return found
    }

    /// CopyObject, then DeleteObject: S3 has no rename. Blobs here are at most tens of MB, well
    /// under CopyObject's 5 GB.
    package func move(_ from: BlobKey, to: BlobKey) async throws {
        try await copy(from, to: to)
        try await delete(from)
    }

    package func localFile(_ key: BlobKey) -> URL? { nil }

    /// S3's least part but the last (5 MiB).
    package var minimumPartSize: Int { 5 << 20 }

    /// One part: CopyObject. More: a multipart upload whose parts are copied from them
    /// (UploadPartCopy), aborted on any failure.
    package func compose(_ key: BlobKey, from parts: [BlobKey]) async throws {
        if parts.count == 1 {
            try await copy(parts[0], to: key)
            return
        }
        let upload = try await MultipartUpload(client: client, key: key.path)
        do {
            for part in parts { try await upload.add(copying: copySource(part)) }
            try await upload.complete()
        } catch {
            await upload.abort()
            throw error
        }
    }

    /// `/{bucket}/{key}`, as `x-amz-copy-source` names a blob.
    private func copySource(_ key: BlobKey) -> String {
        "/" + SigV4.encode(client.settings.bucket) + "/" + SigV4.encode(key.path, keepSlash: true)
    }

    private func copy(_ from: BlobKey, to: BlobKey) async throws {
        let answer = try await client.send(.PUT, key: to.path, headers: [("x-amz-copy-source", copySource(from))], operation: "CopyObject")
        // S3 may answer 200 with an error inside, when the copy fails after it started answering.
        if String(buffer: answer.body).contains("<Error>") { throw S3Client.error(answer, operation: "CopyObject") }
    }

    /// Makes the bucket when it does not exist (for tests and first starts against MinIO).
    package func createBucketIfMissing() async throws {
        // Outside us-east-1, S3 wants the bucket's region named in the request.
        let region = client.settings.region
        let configuration =
            "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>"
            + XMLText.escape(region) + "</LocationConstraint></CreateBucketConfiguration>"
        let body = region == "us-east-1" ? nil : ByteBuffer(string: configuration)
        _ = try await client.send(.PUT, key: nil, body: body, accepting: [200, 409], operation: "CreateBucket")
    }

    private func putObject(_ key: BlobKey, _ body: ByteBuffer) async throws {
        _ = try await client.send(.PUT, key: key.path, headers: Self.typed(key.path), body: body, operation: "PutObject")
    }

    /// The `Content-Type` an image blob is stored with, from its name's extension (a rendered
    /// edit's `.jpeg`, a variant's `.webp`), so a presigned GET of it is served as that image by
    /// any S3 server; none for other blobs (S3's `binary/octet-stream`).
    static func typed(_ key: String) -> [(String, String)] {
        let types = ["jpeg": "image/jpeg", "jpg": "image/jpeg", "png": "image/png", "webp": "image/webp", "avif": "image/avif"]
        guard let dot = key.lastIndex(of: "."), let type = types[String(key[key.index(after: dot)...])] else { return [] }
        return [("content-type", type)]
    }
}

/// One multipart upload under way: parts numbered from 1 as added, then completed or aborted.
final class MultipartUpload: @unchecked Sendable {
    let client: S3Client
    let key: String
    let id: String
    /// Each part's number and ETag, in order. Touched by one task at a time (the upload's owner).
    private var parts: [(number: Int, etag: String)] = []

    init(client: S3Client, key: String) async throws {
        self.client = client
        self.key = key
        let answer = try await client.send(
            .POST,
            key: key,
            query: [("uploads", "")],
            headers: S3BlobStore.typed(key),
            operation: "CreateMultipartUpload"
        )
        guard let id = XMLText.first("UploadId", in: String(buffer: answer.body)) else {
            throw S3Error(status: answer.status, code: "MalformedAnswer", message: "no UploadId", operation: "CreateMultipartUpload")
        }
        self.id = id
    }

    /// The next part: its bytes (UploadPart).
    func add(_ part: ByteBuffer) async throws {
        try await add(body: part, copying: nil)
    }

    /// The next part, copied by the server from the blob `source` names (UploadPartCopy).
    func add(copying source: String) async throws {
        try await add(body: nil, copying: source)
    }

    private func add(body: ByteBuffer?, copying source: String?) async throws {
        let number = parts.count + 1
        let operation = source == nil ? "UploadPart" : "UploadPartCopy"
        let answer = try await client.send(
            .PUT,
            key: key,
            query: [("partNumber", String(number)), ("uploadId", id)],
            headers: source.map { [("x-amz-copy-source", $0)] } ?? [],
            body: body,
            operation: operation
        )
        // A copy's ETag is in its answer's body, which may be an error after a 200; a part's in
        // the headers.
        let text = source == nil ? "" : String(buffer: answer.body)
        if text.contains("<Error>") { throw S3Client.error(answer, operation: operation) }
        guard let etag = source == nil ? answer.headers.first(name: "etag") : XMLText.first("ETag", in: text) else {
            throw S3Error(status: answer.status, code: "MalformedAnswer", message: "no ETag for part \(number)", operation: operation)
        }
        parts.append((number, etag))
    }

    func complete() async throws {
        let body =
            "<CompleteMultipartUpload>"
            + parts.map {
                "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(XMLText.escape($0.etag))</ETag></Part>"
            }.joined() + "</CompleteMultipartUpload>"
        let answer = try await client.send(
            .POST,
            key: key,
            query: [("uploadId", id)],
            body: ByteBuffer(string: body),
            operation: "CompleteMultipartUpload"
        )
        // S3 may answer 200 with an error inside, when it fails after starting to answer.
        let text = String(buffer: answer.body)
        if text.contains("<Error>") { throw S3Client.error(answer, operation: "CompleteMultipartUpload") }
    }

    /// Gives up the upload (its parts are deleted); best effort: a failure here leaves parts a
    /// bucket lifecycle rule for incomplete uploads removes, never a visible object.
    func abort() async {
        _ = try? await client.send(.DELETE, key: key, query: [("uploadId", id)], accepting: [200, 204, 404], operation: "AbortMultipartUpload")
    }
}
