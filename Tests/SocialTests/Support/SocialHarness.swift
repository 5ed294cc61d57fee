import AsyncHTTPClient
import Blobs
import Contracts
import EventBus
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

@testable import Social

/// social for one test: its own database (as the role owning only `social`), the test Kafka
/// cluster with a projection group of its own, a blob directory of its own, a fake photo-catalog
/// (which also publishes the key test tokens are signed with), and the application on a free port.
struct SocialHarness: Sendable {
    let app: RunningApplication
    let catalog: FakePhotoCatalog
    let database: TestDatabase
    let blobs: URL
    let logs: CapturedOutput
    /// The configuration the application runs with, for starting it as a process.
    let environment: [String: String]

    static let issuer = ServiceHarness.issuer
    static let mediaKey = "media-signing-key-for-tests-0123456789abcdef"
    static let fixtures = Bundle.module.resourceURL!.appendingPathComponent("Fixtures")

    static func photo(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: fixtures.appendingPathComponent("\(name).jpg")))
    }

    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        _ body: @Sendable (SocialHarness) async throws -> Result
    ) async throws -> Result {
        let catalog = FakePhotoCatalog(images: ["Aqua.jpg": try photo("Aqua")])
        try await catalog.start()
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("social-blobs-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: blobs) }
        do {
            let result = try await run(overrides, catalog: catalog, blobs: blobs, body)
            await catalog.stop()
            return result
        } catch {
            await catalog.stop()
            throw error
        }
    }

    /// social's own settings for a test against `catalog` and `blobs`.
    static func settings(catalog: FakePhotoCatalog, blobs: URL) -> [String: String] {
        [
            "EVENTS_RETRY_BACKOFF": "50ms",
            "SOCIAL_PROJECTION_GROUP": "social-test-\(UUID().uuidString.prefix(8))",
            "SOCIAL_PUBLIC_URL": "https://splash.test",
            "SOCIAL_BLOB_DIR": blobs.path,
            "RENDER_MEDIA_KEY": mediaKey,
            "SOCIAL_PHOTO_CATALOG_URL": catalog.baseURL,
            "CATALOG_SERVICE_TOKEN": "catalog-service-token-for-tests-0123456789",
            "SOCIAL_IMAGE_WORKERS": "2",
        ]
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        catalog: FakePhotoCatalog,
        blobs: URL,
        _ body: @Sendable (SocialHarness) async throws -> Result
    ) async throws -> Result {
        let service = try await ServiceHarness.prepare(
            .init(schema: "social", databasePoolSize: 12, keys: ("SOCIAL", catalog.baseURL + "/jwks.json")),
            settings: settings(catalog: catalog, blobs: blobs),
            overrides: overrides
        )
        let logs = try CapturedOutput()
        let factory = LogSettings(format: .json, level: .info).makeHandlerFactory(output: logs.output)
        let logger = Logger(label: "social") { label in factory(label, nil) }
        return try await service.run("social", SocialConfiguration.self, logger: logger, build: buildApplication) { app in
            try await body(
                SocialHarness(app: app, catalog: catalog, database: service.database!, blobs: blobs, logs: logs, environment: service.environment)
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
        bytes: [UInt8]? = nil
    ) async throws -> TestResponse {
        var all = headers
        if let user { all.append(("Authorization", "Bearer \(try token(user: user))")) }
        if json != nil { all.append(("Content-Type", "application/json")) }
        let body: HTTPClientRequest.Body? = json.map { .bytes(ByteBuffer(string: $0)) } ?? bytes.map { .bytes(ByteBuffer(bytes: $0)) }
        return try await app.request(method, path, headers: all, body: body)
    }

    /// `POST /v1/posts` with a fresh idempotency key unless one is given.
    func post(_ json: String, user: UUID, key: String = UUID().uuidString) async throws -> TestResponse {
        try await call(.post, "/v1/posts", user: user, headers: [("Idempotency-Key", key)], json: json)
    }

    /// `POST /storage/v1/object/{bucket}/{name}` with the raw bytes.
    func upload(_ bytes: [UInt8], bucket: String = "posts", name: String, user: UUID, headers: [(String, String)] = []) async throws -> TestResponse {
        try await call(.post, "/storage/v1/object/\(bucket)/\(name)", user: user, headers: [("Content-Type", "image/jpeg")] + headers, bytes: bytes)
    }

    // MARK: Other services' events

    /// Publishes `auth.user.registered.v1` for `user` and waits until the projection has it.
    func register(_ user: UUID, username: String) async throws {
        try await TestKafka.shared.publish(
            [UserRegistered(userId: user, username: username, role: .customer, registeredAt: Date())],
            source: "/splash/auth"
        )
        try await waitFor("the profile of \(username)") {
            try await count("profiles", where: "user_id = '\(user.lowercased)' AND username = '\(username)'") == 1
        }
    }

    /// A completed edit of `user`'s: its rendered JPEG in the blob store, as edit-render leaves it,
    /// and `render.edit.completed.v1`, once the projection has it.
    func completedEdit(of user: UUID, photo: String = "FreshFlower") async throws -> UUID {
        let edit = UUID()
        let bytes = try Self.photo(photo)
        try await FileBlobStore(root: blobs).put(.edited(user: user, edit: edit, format: "jpeg"), bytes: bytes)
        try await TestKafka.shared.publish(
            [
                EditCompleted(
                    editId: edit,
                    userId: user,
                    width: 1600,
                    height: 1203,
                    bytes: bytes.count,
                    quality: 92,
                    format: .jpeg,
                    completedAt: Date()
                )
            ],
            source: "/splash/edit-render"
        )
        try await waitFor("edit \(edit) in the projection") { try await count("edits", where: "edit_id = '\(edit.lowercased)'") == 1 }
        return edit
    }

    /// The events social published keyed by `user`, in order.
    func published(by user: UUID) async throws -> [EventEnvelope] {
        try await database.waitUntilOutboxIsPublished(schema: "social")
        return try await TestKafka.shared.events(on: TopicCatalog.socialActivity.name, key: user.lowercased)
    }

    /// Rows of `social.<table>` matching `condition`, read as the superuser.
    func count(_ table: String, where condition: String = "true") async throws -> Int {
        try await database.count("social.\(table)", where: condition)
    }

    /// The files under the blob directory (temporary files included).
    func blobFiles() -> [String] {
        Self.files(under: blobs)
    }

    static func files(under folder: URL) -> [String] {
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        return
            (walker?.compactMap {
                ($0 as? URL).flatMap { (try? $0.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true ? $0.path : nil }
            } ?? [])
    }

    func waitFor(_ what: String, timeout: Duration = .seconds(30), _ condition: @Sendable () async throws -> Bool) async throws {
        try await eventually(what, timeout: timeout, condition)
    }
}
