import Contracts
import EventBus
import Foundation
import HTTPTypes
import Identity
import LocalStack
import NIOCore
import PostgresNIO
import ServiceKit
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
    let database: TestDatabase

    static func with<Result: Sendable>(
        apns: Bool = true,
        _ overrides: [String: String] = [:],
        _ body: @Sendable (NotifyHarness) async throws -> Result
    ) async throws -> Result {
        let keys = FakePhotoCatalog(images: [:])
        try await keys.start()
        let standIn = apns ? try APNsStandIn() : nil
        try await standIn?.start()
        do {
            let result = try await run(overrides, keys: keys, apns: standIn, body)
            await standIn?.stop()
            await keys.stop()
            return result
        } catch {
            await standIn?.stop()
            await keys.stop()
            throw error
        }
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        keys: FakePhotoCatalog,
        apns: APNsStandIn?,
        _ body: @Sendable (NotifyHarness) async throws -> Result
    ) async throws -> Result {
        var settings = [
            "EVENTS_RETRY_BACKOFF": "50ms",
            "NOTIFY_CONSUMER_GROUP": "notify-test-\(UUID().uuidString.prefix(8))",
            "NOTIFY_RETRY_BACKOFF": "200ms",
        ]
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
            try await body(NotifyHarness(app: app, keys: keys, apns: apns, database: service.database!))
        }
    }

    // MARK: Calls

    func call(_ method: HTTPRequest.Method, _ path: String, as user: UUID?, json: String? = nil) async throws -> TestResponse {
        var headers: [(String, String)] = []
        if let user { headers.append(("Authorization", "Bearer \(try token(for: user))")) }
        if json != nil { headers.append(("Content-Type", "application/json")) }
        return try await app.request(method, path, headers: headers, body: json.map { .bytes(ByteBuffer(string: $0)) })
    }

    func token(for user: UUID) throws -> String {
        try testAccessToken(user: user, key: keys.key, issuer: ServiceHarness.issuer)
    }

    /// Registers a new device for `user` and gives back its token.
    @discardableResult
    func registerDevice(for user: UUID, token: String = NotifyHarness.newDeviceToken(), environment: String = "production") async throws -> String {
        let response = try await call(
            .put,
            "/v1/devices/\(token)",
            as: user,
            json: #"{"platform":"ios","topic":"fi.splash.TrackBite","environment":"\#(environment)"}"#
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
