import Contracts
import EventBus
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import LocalStack
import NIOCore
import PostgresNIO
import ServiceKit
import Synchronization
import TestSupport

@testable import Notify

/// notify for one test: its own database (as the role owning only `notify`), the test Kafka
/// cluster with a consumer group of its own, a key server for test tokens, and — unless the test
/// wants the sink — the APNs stand-in as both of Apple's hosts.
struct NotifyHarness: Sendable {
    let app: RunningApplication
    let keys: FakePhotoCatalog
    /// `nil` when notifications go to the sink.
    let apns: APNsStandIn?
    /// auth as notify asks it for a user's address.
    let directory: FakeDirectory
    let database: TestDatabase

    /// - Parameter smtp: where mail goes; without one, the catcher keeps it.
    static func with<Result: Sendable>(
        apns: Bool = true,
        smtp: SMTPTestServer? = nil,
        _ overrides: [String: String] = [:],
        _ body: @Sendable (NotifyHarness) async throws -> Result
    ) async throws -> Result {
        let keys = FakePhotoCatalog(images: [:])
        try await keys.start()
        let directory = try await FakeDirectory.start()
        let standIn = apns ? try APNsStandIn() : nil
        try await standIn?.start()
        do {
            let result = try await run(overrides, keys: keys, apns: standIn, smtp: smtp, directory: directory, body)
            await standIn?.stop()
            await directory.stop()
            await keys.stop()
            return result
        } catch {
            await standIn?.stop()
            await directory.stop()
            await keys.stop()
            throw error
        }
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        keys: FakePhotoCatalog,
        apns: APNsStandIn?,
        smtp: SMTPTestServer?,
        directory: FakeDirectory,
        _ body: @Sendable (NotifyHarness) async throws -> Result
    ) async throws -> Result {
        var settings = [
            "EVENTS_RETRY_BACKOFF": "50ms",
            "NOTIFY_CONSUMER_GROUP": "notify-test-\(UUID().uuidString.prefix(8))",
            "NOTIFY_RETRY_BACKOFF": "200ms",
            "NOTIFY_AUTH_URL": directory.baseURL,
            "AUTH_SERVICE_TOKEN": FakeDirectory.serviceToken,
            "SMTP_FROM": "Splash <receipts@splash.example>",
        ]
        if let smtp {
            settings["SMTP_URL"] = smtp.url
            settings["SMTP_CA_FILE"] = smtp.authority.caFile
        }
        if let apns {
            settings["NOTIFY_APNS_URL"] = apns.baseURL
            settings["NOTIFY_APNS_SANDBOX_URL"] = apns.baseURL
            settings["NOTIFY_APNS_CA_FILE"] = apns.caFile
            settings["NOTIFY_APNS_KEY_FILE"] = apns.keyFile
            settings["NOTIFY_APNS_KEY_ID"] = apns.keyID
            settings["NOTIFY_APNS_TEAM_ID"] = apns.teamID
        }
        let service = try await ServiceHarness.prepare(
            .init(schema: "notify", databasePoolSize: 6, keys: ("NOTIFY", keys.baseURL + "/jwks.json")),
            settings: settings,
            overrides: overrides
        )
        return try await service.run("notify", NotifyConfiguration.self, logger: ServiceHarness.quietLogger("notify"), build: buildApplication) {
            app in
            try await body(NotifyHarness(app: app, keys: keys, apns: apns, directory: directory, database: service.database!))
        }
    }

    // MARK: Calls

    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        as user: UUID?,
        role: String = "customer",
        json: String? = nil
    ) async throws -> TestResponse {
        var headers: [(String, String)] = []
        if let user { headers.append(("Authorization", "Bearer \(try token(for: user, role: role))")) }
        if json != nil { headers.append(("Content-Type", "application/json")) }
        return try await app.request(method, path, headers: headers, body: json.map { .bytes(ByteBuffer(string: $0)) })
    }

    func token(for user: UUID, role: String = "customer") throws -> String {
        try testAccessToken(user: user, role: role, key: keys.key, issuer: ServiceHarness.issuer)
    }

    /// Registers a new device for `user` and gives back its token.
    @discardableResult
    func registerDevice(
        for user: UUID,
        token: String = NotifyHarness.newDeviceToken(),
        environment: String = "production",
        locale: String = "en"
    ) async throws -> String {
        let response = try await call(
            .put,
            "/v1/devices/\(token)",
            as: user,
            json: #"{"platform":"ios","topic":"fi.splash.TrackBite","environment":"\#(environment)","locale":"\#(locale)"}"#
        )
        guard response.status == 200 else { throw HarnessError("registering a device answered \(response.status): \(response.text)") }
        return token
    }

    static func newDeviceToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The delivery log's rows: status, device, apns id, attempts.
    func deliveries() async throws -> [(status: String, device: String, apnsID: UUID, attempts: Int, kind: String)] {
        try await database.withClient { client in
            let rows = try await client.query(
                "SELECT status, device_token, apns_id, attempts, kind FROM notify.deliveries ORDER BY id",
                logger: ServiceHarness.quietLogger("notify-test")
            )
            var all: [(String, String, UUID, Int, String)] = []
            for try await row in rows.decode((String, String, UUID, Int, String).self) { all.append(row) }
            return all
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// auth's admin read of a user, as notify asks it for a receipt's address: the users a test
/// gives an address, 404 for the rest, 403 without the service token.
final class FakeDirectory: Sendable {
    static let serviceToken = "auth-service-token-for-notify-tests-0123456789"
    private let addresses = Mutex<[UUID: String]>([:])
    private let server = Mutex<TestServer?>(nil)

    var baseURL: String { "http://127.0.0.1:\(server.withLock { $0?.port ?? 0 })" }

    static func start() async throws -> FakeDirectory {
        let directory = FakeDirectory()
        let router = Router()
        router.get("auth/v1/admin/users/:id") { request, context -> Response in
            guard request.headers[HTTPField.Name("X-Splash-Service-Token")!] == serviceToken else { return Response(status: .forbidden) }
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)), let email = directory.address(of: id) else {
                return Response(status: .notFound)
            }
            let body = #"{"id":"\#(id.uuidString.lowercased())","email":"\#(email)"}"#
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        let server = try await TestServer.start(router, label: "fake-directory")
        directory.server.withLock { $0 = server }
        return directory
    }

    func set(_ user: UUID, _ email: String) {
        addresses.withLock { $0[user] = email }
    }

    private func address(of user: UUID) -> String? {
        addresses.withLock { $0[user] }
    }

    func stop() async { await server.withLock { $0 }?.stop() }
}
