import AsyncHTTPClient
import Foundation
import HTTPTypes
import Identity
import LocalStack
import Logging
import NIOCore
import PostgresNIO
import ServiceKit
import Synchronization
import TestSupport

@testable import EditRender

/// edit-render for one test: its own database (as the role owning only `render`), the test Kafka
/// cluster with a consumer group of its own, a blob directory of its own, a fake photo-catalog
/// serving real fixture photos, and `replicas` applications (each `--role all` unless told).
struct RenderHarness: Sendable {
    let apps: [RunningApplication]
    let catalog: FakePhotoCatalog
    let database: TestDatabase
    let blobs: URL
    let logs: CapturedOutput
    /// The configuration the applications run with, for starting more as processes.
    let environment: [String: String]

    var app: RunningApplication { apps[0] }

    static let issuer = ServiceHarness.issuer
    static let mediaKey = "media-signing-key-for-tests-0123456789abcdef"
    static let photos = Bundle.module.resourceURL!.appendingPathComponent("Fixtures/photos")

    static func photo(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: photos.appendingPathComponent("\(name).jpg")))
    }

    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        replicas: Int = 1,
        _ body: @Sendable (RenderHarness) async throws -> Result
    ) async throws -> Result {
        var images: [String: [UInt8]] = [:]
        for name in ["Aqua", "Storm", "FreshFlower"] { images["\(name).jpg"] = try photo(name) }
        images["Broken.jpg"] = Array(try photo("Storm").prefix(40_000))
        let catalog = FakePhotoCatalog(images: images)
        try await catalog.start()
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("render-blobs-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: blobs) }
        do {
            let result = try await run(overrides, replicas: replicas, catalog: catalog, blobs: blobs, body)
            await catalog.stop()
            return result
        } catch {
            await catalog.stop()
            throw error
        }
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        replicas: Int,
        catalog: FakePhotoCatalog,
        blobs: URL,
        _ body: @Sendable (RenderHarness) async throws -> Result
    ) async throws -> Result {
        let service = try await ServiceHarness.prepare(
            .init(schema: "render", keys: ("RENDER", catalog.baseURL + "/jwks.json")),
            settings: [
                "EVENTS_RETRY_BACKOFF": "50ms",
                "RENDER_WORKER_GROUP": "render-test-\(UUID().uuidString.prefix(8))",
                "RENDER_WORKERS": "2",
                "RENDER_PUBLIC_URL": "https://splash.test",
                "RENDER_BLOB_DIR": blobs.path,
                "RENDER_MEDIA_KEY": mediaKey,
                "RENDER_PHOTO_CATALOG_URL": catalog.baseURL,
                "CATALOG_SERVICE_TOKEN": "catalog-service-token-for-tests-0123456789",
                "RENDER_SOURCE_HOSTS": "127.0.0.1",
                "RENDER_ALLOW_PRIVATE_SOURCES": "true",
            ],
            overrides: overrides
        )
        let logs = try CapturedOutput()
        let factory = LogSettings(format: .json, level: .info).makeHandlerFactory(output: logs.output)
        let logger = Logger(label: "edit-render") { label in factory(label, nil) }
        return try await service.run("edit-render", EditRenderConfiguration.self, logger: logger, replicas: replicas, build: buildApplication) {
            apps in
            try await body(
                RenderHarness(apps: apps, catalog: catalog, database: service.database!, blobs: blobs, logs: logs, environment: service.environment)
            )
        }
    }

    // MARK: Calls

    func token(user: UUID) throws -> String {
        try testAccessToken(user: user, key: catalog.key, issuer: Self.issuer)
    }

    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        user: UUID?,
        headers: [(String, String)] = [],
        json: String? = nil,
        bytes: [UInt8]? = nil,
        on replica: Int = 0
    ) async throws -> TestResponse {
        var all = headers
        if let user { all.append(("Authorization", "Bearer \(try token(user: user))")) }
        if json != nil { all.append(("Content-Type", "application/json")) }
        let body: HTTPClientRequest.Body? = json.map { .bytes(ByteBuffer(string: $0)) } ?? bytes.map { .bytes(ByteBuffer(bytes: $0)) }
        return try await apps[replica].request(method, path, headers: all, body: body)
    }

    /// `POST /v1/edits` with a fresh idempotency key unless one is given.
    func createEdit(_ json: String, user: UUID, key: String = UUID().uuidString) async throws -> TestResponse {
        try await call(.post, "/v1/edits", user: user, headers: [("Idempotency-Key", key)], json: json)
    }

    func upload(_ bytes: [UInt8], user: UUID) async throws -> TestResponse {
        try await call(.post, "/v1/uploads", user: user, headers: [("Content-Type", "image/jpeg")], bytes: bytes)
    }

    /// Polls the edit until it is completed or failed, and returns it.
    func finished(_ id: String, user: UUID, timeout: Duration = .seconds(30)) async throws -> [String: Any] {
        let last = Mutex<TestResponse?>(nil)
        try await waitUntilReady("edit \(id) to finish", timeout: timeout) {
            guard let response = try? await call(.get, "/v1/edits/\(id)", user: user), response.status == 200,
                let status = (try? response.json())?["status"] as? String
            else { return false }
            last.withLock { $0 = response }
            return status == "completed" || status == "failed"
        }
        return try last.withLock { $0 }!.json()
    }

    /// Rows of `render.<table>` matching `condition`, read as the superuser.
    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await database.count("render.\(table)", where: condition)
    }
}
