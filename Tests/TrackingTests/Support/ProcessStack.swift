import Foundation
import Identity
import LocalStack
import TestSupport

/// auth, tracking (unseeded) and the gateway as processes on a fresh database and the test Kafka
/// cluster, with the gateway in front of both and rate limits out of a test's way: the apps' path
/// as it runs, for tests that take a `WholeStackTurns` turn.
struct ProcessStack: Sendable {
    /// The service token auth accepts, for its admin API.
    static let serviceToken = "auth-service-token-for-tests-0123456789"
    static let issuer = "http://localhost:8080/auth/v1"

    let database: TestDatabase
    let auth: ServiceProcess
    let tracking: ServiceProcess
    let gateway: ServiceProcess

    /// - Parameter trackingSettings: added to tracking's environment.
    static func start(trackingSettings: [String: String] = [:]) async throws -> ProcessStack {
        let database = try await TestPostgres.shared.makeDatabase()
        let kafka = try await TestKafka.shared.running()
        let common = ["KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
                      "OUTBOX_POLL_INTERVAL": "50ms", "LOG_LEVEL": "warning"]
        let auth = try await ServiceProcess("auth", environment: common.merging([
            "DATABASE_URL": try await database.makeServiceRole(schema: "auth", password: "e2e-auth").url, "AUTH_JWT_KEY": SigningKey.generate().pem,
            "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4", "AUTH_SERVICE_TOKEN": serviceToken, "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
            "AUTH_RATE_LIMIT_TOKEN": "100000/1m", "AUTH_RATE_LIMIT_SIGNUP": "100000/1m",
        ]) { _, new in new })
        let tracking = try await ServiceProcess("tracking", environment: common.merging([
            "DATABASE_URL": try await database.makeServiceRole(schema: "tracking", password: "e2e-tracking").url,
            "TRACKING_JWKS_URL": "\(auth.baseURL)/auth/v1/.well-known/jwks.json", "TRACKING_JWT_ISSUER": issuer, "TRACKING_SEED": "false",
        ].merging(trackingSettings) { _, new in new }) { _, new in new })
        let gateway = try await ServiceProcess("gateway", environment: common.merging([
            "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_TRACKING_URL": tracking.baseURL, "GATEWAY_JWT_ISSUER": issuer,
            "GATEWAY_RATE_LIMIT_TRACKING": "100000/1m", "GATEWAY_RATE_LIMIT_AUTH": "100000/1m",
        ]) { _, new in new })
        return ProcessStack(database: database, auth: auth, tracking: tracking, gateway: gateway)
    }

    /// Stops the gateway, then tracking, then auth.
    func stop() async {
        for process in [gateway, tracking, auth] { await process.stop() }
    }
}
