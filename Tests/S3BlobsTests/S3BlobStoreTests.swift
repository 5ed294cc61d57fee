import AsyncHTTPClient
import Blobs
import Foundation
import LocalStack
import Logging
import NIOCore
import S3Blobs
import TestSupport
import Testing

/// The S3 blob store against moto, an S3-protocol server on loopback: round trips small and large
/// (multipart), ranges, listings past S3's 1,000-key pages, a wrong secret, and uploads that fail
/// halfway leaving nothing behind.
@Suite("S3 blob store", .serialized) struct S3BlobStoreTests {
    /// One client for every store of the run, as a service has one.
    static let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: S3BlobStore.httpConfiguration)

    static func store(
        _ server: MotoServer,
        bucket: String = "splash-\(UUID().uuidString.prefix(8).lowercased())",
        accessKeyID: String = "testing",
        secret: String = "testing",
        create: Bool = true
    ) async throws -> S3BlobStore {
        var logger = Logger(label: "s3-test")
        logger.logLevel = ProcessInfo.processInfo.environment["S3_TEST_LOG"] == nil ? .error : .debug
        let settings = S3Settings(
            endpoint: server.endpoint,
            region: "us-east-1",
            bucket: bucket,
            accessKeyID: accessKeyID,
            secretAccessKey: secret,
            requestTimeout: .seconds(20),
            attempts: 3
        )
        let store = S3BlobStore(settings: settings, http: Self.http, logger: logger)
        if create { try await store.createBucketIfMissing() }
        return store
    }

    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        var value = seed
        return (0..<count).map { index in
            value = value &* 31 &+ UInt8(truncatingIfNeeded: index >> 8)
            return value
        }
    }

    /// `bytes` as a stream of `chunk`-sized buffers, as an upload's body arrives.
    static func stream(_ bytes: [UInt8], chunk: Int = 1 << 20) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + chunk, bytes.count)
                continuation.yield(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
            }
            continuation.finish()
        }
    }

    @Test func objectsOfEverySizeComeBackWhole() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        let store = try await Self.store(server)
        for (index, count) in [0, 1, 15 << 20, 40 << 20].enumerated() {
            let content = Self.bytes(count, seed: UInt8(index))
            let key = BlobKey("round-trip/\(count)")!
            try await store.put(key, bytes: content)
            #expect(try await store.get(key) == content, "\(count) bytes")
            #expect(try await store.size(of: key) == count)
            // Streamed: the same, whether one PUT or parts.
            let streamed = BlobKey("streamed/\(count)")!
            #expect(try await store.put(streamed, streaming: Self.stream(content), limit: 64 << 20) == count)
            #expect(try await store.get(streamed) == content, "\(count) bytes streamed")
        }
        // Streamed: the 40 MB object as it arrives, whole, with its size.
        let big = BlobKey("round-trip/\(40 << 20)")!
        let stream = try #require(try await store.open(big))
        var received: [UInt8] = []
        var chunks = 0
        for try await chunk in stream.chunks {
            received += chunk.readableBytesView
            chunks += 1
        }
        #expect(stream.size == 40 << 20 && received == Self.bytes(40 << 20, seed: 3) && chunks > 1)
        #expect(try await store.open(BlobKey("round-trip/none")!) == nil)
        #expect(try await store.get(BlobKey("round-trip/none")!) == nil)
        #expect(try await store.size(of: BlobKey("round-trip/none")!) == nil)
        try await store.delete(BlobKey("round-trip/1")!)
        try await store.delete(BlobKey("round-trip/1")!)
        #expect(try await store.get(BlobKey("round-trip/1")!) == nil)
    }

    @Test func rangesReadPartsOfAnObject() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        let store = try await Self.store(server)
        let content = Self.bytes(3 << 20)
        let key = BlobKey("ranged/photo.jpg")!
        try await store.put(key, bytes: content)
        #expect(try await store.get(key, range: 0..<10) == Array(content[0..<10]))
        #expect(try await store.get(key, range: 1_000_000..<2_500_000) == Array(content[1_000_000..<2_500_000]))
        #expect(try await store.get(key, range: content.count - 3..<content.count + 100) == Array(content.suffix(3)), "clamped to the end")
        #expect(try await store.get(key, range: content.count + 10..<content.count + 20) == [], "past the end")
        #expect(try await store.get(BlobKey("ranged/none")!, range: 0..<10) == nil)
    }

    @Test func listingsGoPastOneThousandKeys() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        let store = try await Self.store(server)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1_100 {
                if index >= 16 { try await group.next() }
                group.addTask { try await store.put(BlobKey("listed/\(String(format: "%05d", index)).txt")!, bytes: Array("\(index)".utf8)) }
            }
            try await group.waitForAll()
        }
        try await store.put(BlobKey("other/a.txt")!, bytes: [1])
        let listed = try await store.list(prefix: "listed/")
        #expect(listed.count == 1_100)
        #expect(listed.map(\.key) == (0..<1_100).map { "listed/\(String(format: "%05d", $0)).txt" })
        #expect(listed.first?.size == 1 && listed.last?.size == 4)
        #expect(try await store.list(prefix: "other/").map(\.key) == ["other/a.txt"])
    }

    @Test func aWrongSecretIsRefusedWithS3sOwnReason() async throws {
        let server = try await MotoServer(authenticating: true)
        defer { server.stop() }
        let credentials = try #require(server.credentials)
        let store = try await Self.store(server, bucket: server.bucket, accessKeyID: credentials.accessKeyID, secret: credentials.secret)
        try await store.put(BlobKey("signed/a.txt")!, bytes: [1, 2, 3])
        #expect(try await store.get(BlobKey("signed/a.txt")!) == [1, 2, 3])

        let forged = try await Self.store(
            server,
            bucket: server.bucket,
            accessKeyID: credentials.accessKeyID,
            secret: credentials.secret + "x",
            create: false
        )
        do {
            _ = try await forged.get(BlobKey("signed/a.txt")!)
            Issue.record("a wrong secret was accepted")
        } catch let error as S3Error {
            #expect(error.status == 403 && error.code == "SignatureDoesNotMatch", "\(error)")
            #expect(error.description.contains("403 SignatureDoesNotMatch"))
        }
    }

    /// `S3_PRESIGN`: media links straight to the bucket. moto cannot judge a presigned URL with its
    /// IAM checks on (it fails them with a 500, boto3's own included), so boto3 is the judge: the
    /// link for a key, a time and a lifetime is the one botocore presigns for them, byte for byte;
    /// and moto serves the object through it.
    @Test func presignedMediaLinksAreBotocoresAndReadFromTheBucket() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        var settings = S3Settings(
            endpoint: server.endpoint,
            region: "eu-north-1",
            bucket: "splash-\(UUID().uuidString.prefix(8).lowercased())",
            accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        )
        settings.presign = true
        let store = S3BlobStore(settings: settings, http: Self.http, logger: Logger(label: "s3-test"))
        try await store.createBucketIfMissing()
        let key = BlobKey("6f1c0a2e-1111-4222-8333-944455556666/uploads/a photo+1.jpg")!
        let content = Self.bytes(100_000)
        try await store.put(key, bytes: content)

        // boto3 at a fixed time, against ours at the same time.
        let signedAt = 1_795_000_000
        let botocore = """
            import boto3, datetime, sys, botocore.auth
            from botocore.config import Config
            botocore.auth.get_current_datetime = lambda: datetime.datetime.fromtimestamp(int(sys.argv[5]), datetime.timezone.utc).replace(tzinfo=None)
            s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="eu-north-1", aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
                              aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                              config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
            params = {"Bucket": sys.argv[2], "Key": sys.argv[3]}
            if len(sys.argv) > 6: params.update(ResponseContentType=sys.argv[6], ResponseCacheControl=sys.argv[7])
            print(s3.generate_presigned_url("get_object", Params=params, ExpiresIn=int(sys.argv[4])))
            """
        let theirs = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c", botocore, server.endpoint.absoluteString, settings.bucket, key.path, "3600", String(signedAt),
            ]
        ).runToCompletion().trimmingCharacters(in: .whitespacesAndNewlines)
        let ours = store.client.presignedGet(key.path, date: Date(timeIntervalSince1970: TimeInterval(signedAt)), expiresIn: 3_600)
        func parameters(_ url: String) -> [String: String] {
            Dictionary(uniqueKeysWithValues: (URLComponents(string: url)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        }
        #expect(ours.split(separator: "?").first == theirs.split(separator: "?").first, "\(ours)\n\(theirs)")
        #expect(parameters(ours) == parameters(theirs), "\(ours)\n\(theirs)")
        #expect(parameters(ours)["X-Amz-Signature"]?.count == 64)

        // Media links made with it: stable for an expiry, served by the bucket.
        let links = BlobStoreChoice.s3(settings).mediaLinks(
            MediaLinks(secret: Array(repeating: 7, count: 32), lifetime: .seconds(900), publicBase: "https://splash.test"),
            store: store
        )
        let expires = Int(Date().timeIntervalSince1970) + 900
        let link = links.sign(key, expires: expires)
        #expect(
            link.url.hasPrefix(server.endpoint.absoluteString + "/\(settings.bucket)/") && links.sign(key, expires: expires).url == link.url,
            "\(link.url)"
        )
        let response = try await Self.http.execute(HTTPClientRequest(url: link.url), timeout: .seconds(10))
        let served = Array(buffer: try await response.body.collect(upTo: 1 << 20))
        #expect(response.status.code == 200 && served == content)

        // A kept image variant's link (`PresignedReads`): the headers the bucket answers with are
        // signed in, as botocore signs them, and the link is the same for the hour. moto does
        // not apply them, so the stored type (from the name) is what it answers.
        let variant = "image/webp"
        let caching = "public, max-age=31536000, immutable"
        let hour = signedAt / 3_600 * 3_600
        let theirsWithHeaders = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c", botocore, server.endpoint.absoluteString, settings.bucket, key.path, "7200", String(hour),
                variant, caching,
            ]
        ).runToCompletion().trimmingCharacters(in: .whitespacesAndNewlines)
        let reads = try #require(BlobStoreChoice.s3(settings).presignedReads(store: store))
        let read = reads.link(key, contentType: variant, cacheControl: caching, now: Date(timeIntervalSince1970: TimeInterval(hour + 1_234)))
        #expect(parameters(read.url) == parameters(theirsWithHeaders) && read.worksFor == 7_200 - 1_234, "\(read.url)\n\(theirsWithHeaders)")
        let now = reads.link(key, contentType: variant, cacheControl: caching)
        #expect(now.worksFor > 3_600 && now.worksFor <= 7_200)
        let direct = try await Self.http.execute(HTTPClientRequest(url: now.url), timeout: .seconds(10))
        #expect(direct.status.code == 200 && direct.headers["content-type"] == ["image/jpeg"], "\(direct.headers)")
        #expect(Array(buffer: try await direct.body.collect(upTo: 1 << 20)) == content)

        // Without S3_PRESIGN, links stay Splash's own.
        settings.presign = false
        let plain = BlobStoreChoice.s3(settings).mediaLinks(
            MediaLinks(secret: Array(repeating: 7, count: 32), lifetime: .seconds(900), publicBase: "https://splash.test"),
            store: store
        )
        #expect(plain.sign(key, expires: expires).url.hasPrefix("https://splash.test/v1/media/"))
        #expect(BlobStoreChoice.s3(settings).presignedReads(store: store) == nil)
    }

    @Test func virtualHostStyleNamesTheBucketInTheHost() throws {
        let settings = S3Settings(
            endpoint: URL(string: "https://s3.eu-north-1.amazonaws.com")!,
            region: "eu-north-1",
            bucket: "splash-blobs",
            accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "secret",
            addressing: .virtual
        )
        let store = S3BlobStore(settings: settings, http: Self.http, logger: Logger(label: "s3-test"))
        let url = store.client.presignedGet("a/b c.jpg", date: Date(timeIntervalSince1970: 1_795_000_000), expiresIn: 60)
        #expect(url.hasPrefix("https://splash-blobs.s3.eu-north-1.amazonaws.com/a/b%20c.jpg?X-Amz-Algorithm="), "\(url)")
        var path = settings
        path.addressing = .path
        #expect(
            S3BlobStore(settings: path, http: Self.http, logger: Logger(label: "s3-test")).client
                .presignedGet("a/b c.jpg", date: Date(timeIntervalSince1970: 1_795_000_000), expiresIn: 60)
                .hasPrefix("https://s3.eu-north-1.amazonaws.com/splash-blobs/a/b%20c.jpg?")
        )
    }

    @Test func anUploadThatFailsHalfwayLeavesNoObjectAndNoParts() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        let store = try await Self.store(server)
        let key = BlobKey("halfway/big.bin")!
        // The body fails after 20 MB: one 16 MB part is uploaded by then.
        let failing = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            for _ in 0..<20 { continuation.yield(ByteBuffer(bytes: Self.bytes(1 << 20))) }
            continuation.finish(throwing: CancellationError())
        }
        await #expect(throws: CancellationError.self) { try await store.put(key, streaming: failing, limit: 64 << 20) }
        #expect(try await store.size(of: key) == nil)
        #expect(try await store.client.openMultipartUploads().isEmpty, "the upload was aborted")
        // Past the limit: refused, nothing kept.
        await #expect(throws: BlobError.tooLarge(limit: 18 << 20)) {
            try await store.put(key, streaming: Self.stream(Self.bytes(40 << 20)), limit: 18 << 20)
        }
        #expect(try await store.size(of: key) == nil)
        #expect(try await store.client.openMultipartUploads().isEmpty)
    }

    @Test func theServerStoppingMidUploadIsAnErrorNotAHang() async throws {
        let server = try await MotoServer()
        let store = try await Self.store(server)
        let key = BlobKey("stopped/big.bin")!
        let body = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            Task {
                for index in 0..<40 {
                    // After the first part has gone: the server goes away.
                    if index == 20 { server.stop() }
                    continuation.yield(ByteBuffer(bytes: Self.bytes(1 << 20)))
                }
                continuation.finish()
            }
        }
        let started = ContinuousClock.now
        await #expect(throws: S3Error.self) { try await store.put(key, streaming: body, limit: 64 << 20) }
        #expect(ContinuousClock.now - started < .seconds(30))
        try await server.start()
        #expect(try await store.size(of: key) == nil)
        server.stop()
    }
}
