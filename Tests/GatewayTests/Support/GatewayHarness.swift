import Foundation
import Identity
import Kafka
import LocalStack
import Logging
import ServiceKit
import TestSupport
import Testing

@testable import Gateway

/// A gateway in front of fake upstreams for one test: auth's routes and key set, edit-render's
/// and photo-catalog's routes all go to `upstream`.
struct GatewayHarness: Sendable {
    let app: RunningApplication
    let upstream: FakeUpstream
    let kafka: KafkaEmbeddedCluster

    static let issuer = ServiceHarness.issuer

    /// Runs a gateway whose upstreams are a fresh `FakeUpstream` (started and stopped here):
    /// auth, photo-catalog and edit-render, and the services named by `alsoRouting` (their URL
    /// variables); `overrides` replace or add variables.
    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        alsoRouting variables: [String] = [],
        _ body: @Sendable (GatewayHarness) async throws -> Result
    ) async throws -> Result {
        let upstream = FakeUpstream()
        try await upstream.start()
        do {
            var overrides = overrides
            for variable in variables { overrides[variable] = upstream.baseURL }
            let result = try await with(overrides, upstream: upstream, body)
            await upstream.stop()
            return result
        } catch {
            await upstream.stop()
            throw error
        }
    }

    /// Runs a gateway in front of `upstream`, which the caller runs.
    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        upstream: FakeUpstream,
        _ body: @Sendable (GatewayHarness) async throws -> Result
    ) async throws -> Result {
        let service = try await ServiceHarness.prepare(
            .init(schema: nil),
            settings: [
                "GATEWAY_AUTH_URL": upstream.baseURL,
                "GATEWAY_EDIT_RENDER_URL": upstream.baseURL,
                "GATEWAY_PHOTO_CATALOG_URL": upstream.baseURL,
                "GATEWAY_JWT_ISSUER": issuer,
                "GATEWAY_TIMEOUT_EDIT_RENDER": "2s",
                "GATEWAY_CONNECT_TIMEOUT": "500ms",
            ],
            overrides: overrides
        )
        let kafka = try await TestKafka.shared.running()
        return try await service.run(
            "gateway",
            GatewayConfiguration.self,
            logger: ServiceHarness.quietLogger("gateway-test"),
            tasksOnEventLoops: true,
            build: buildApplication
        ) { app in
            try await body(GatewayHarness(app: app, upstream: upstream, kafka: kafka))
        }
    }

    /// A token for `user` signed with `key` (the upstream's own key unless the test forges one).
    func token(
        user: UUID = UUID(),
        role: String = "customer",
        key: SigningKey? = nil,
        expiresIn: TimeInterval = 3_600,
        issuer: String = GatewayHarness.issuer
    ) throws -> String {
        try testAccessToken(user: user, role: role, key: key ?? upstream.key, issuer: issuer, expiresIn: expiresIn)
    }

    func get(_ path: String, bearer: String? = nil, headers: [(String, String)] = []) async throws -> TestResponse {
        try await app.request(.get, path, headers: headers + (bearer.map { [("Authorization", "Bearer \($0)")] } ?? []))
    }

    /// The value of a counter or gauge on the gateway's `/metrics` (`name{labels}` as printed),
    /// 0 when it is not there yet.
    func metric(_ series: String) async throws -> Double {
        let line = try await get("/metrics").text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
        return line.flatMap { Double($0.dropFirst(series.count + 1)) } ?? 0
    }
}

extension GatewayHarness {
    /// Waits until the gateway's event feed reads every public partition (`/readyz`).
    func waitForEventFeed() async throws {
        try await waitUntilReady("gateway event feed", timeout: .seconds(30)) {
            (try? await app.request(.get, "/readyz").status) == 200
        }
    }

    var webSocketURL: String { "ws://127.0.0.1:\(app.port)/v1/realtime" }

    /// Whether `/metrics` counts exactly one disconnect of `transport` for `reason` (the labels in
    /// either order).
    func countsOneDisconnect(_ reason: String, transport: String) async -> Bool {
        let metrics = (try? await get("/metrics").text) ?? ""
        return metrics.contains(#"realtime_disconnects_total{reason="\#(reason)",transport="\#(transport)"} 1"#)
            || metrics.contains(#"realtime_disconnects_total{transport="\#(transport)",reason="\#(reason)"} 1"#)
    }
}
