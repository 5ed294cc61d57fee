import Foundation
import Identity
import LocalStack
import NIOHTTP1

/// auth, tracking (unseeded), notify and the gateway as processes on a fresh database and the test
/// Kafka cluster, with the gateway in front of them and rate limits out of a test's way: the apps'
/// path as it runs, for tests that take a `WholeStackTurns` turn (tracking's whole deliveries, the
/// gateway's console, notify's pushes). notify pushes to `apns` when given one, else to its sink;
/// its mail is caught.
package struct ProcessStack: Sendable {
    /// The service token auth accepts, for its admin API.
    package static let serviceToken = "auth-service-token-for-tests-0123456789"
    package static let issuer = "http://localhost:8080/auth/v1"

    package let database: TestDatabase
    package let auth: ServiceProcess
    package let tracking: ServiceProcess
    package let notify: ServiceProcess
    package let gateway: ServiceProcess

    /// - Parameter trackingSettings: added to tracking's environment.
    package static func start(trackingSettings: [String: String] = [:], apns: APNsStandIn? = nil) async throws -> ProcessStack {
        let database = try await TestPostgres.shared.makeDatabase()
        let kafka = try await TestKafka.shared.running()
        let common = [
            "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
            "OUTBOX_POLL_INTERVAL": "50ms", "LOG_LEVEL": "warning",
        ].merging(ServiceHarness.consumerGroups()) { own, _ in own }
        let auth = try await ServiceProcess(
            "auth",
            environment: common.merging([
                "DATABASE_URL": try await database.makeServiceRole(schema: "auth", password: "e2e-auth").url,
                "AUTH_JWT_KEY": SigningKey.generate().pem,
                "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4", "AUTH_SERVICE_TOKEN": serviceToken, "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
                "AUTH_RATE_LIMIT_TOKEN": "100000/1m", "AUTH_RATE_LIMIT_SIGNUP": "100000/1m",
            ]) { _, new in new }
        )
        let tracking = try await ServiceProcess(
            "tracking",
            environment: common.merging(
                [
                    "DATABASE_URL": try await database.makeServiceRole(schema: "tracking", password: "e2e-tracking").url,
                    "TRACKING_JWKS_URL": "\(auth.baseURL)/auth/v1/.well-known/jwks.json", "TRACKING_JWT_ISSUER": issuer, "TRACKING_SEED": "false",
                ].merging(trackingSettings) { _, new in new }
            ) { _, new in new }
        )
        var notifySettings = [
            "DATABASE_URL": try await database.makeServiceRole(schema: "notify", password: "e2e-notify").url,
            "NOTIFY_JWKS_URL": "\(auth.baseURL)/auth/v1/.well-known/jwks.json", "NOTIFY_JWT_ISSUER": issuer,
            "NOTIFY_AUTH_URL": auth.baseURL,
            "AUTH_SERVICE_TOKEN": serviceToken,
        ]
        if let apns {
            notifySettings.merge([
                "NOTIFY_APNS_URL": apns.baseURL, "NOTIFY_APNS_SANDBOX_URL": apns.baseURL, "NOTIFY_APNS_CA_FILE": apns.caFile,
                "NOTIFY_APNS_KEY_FILE": apns.keyFile, "NOTIFY_APNS_KEY_ID": apns.keyID, "NOTIFY_APNS_TEAM_ID": apns.teamID,
            ]) { _, new in new }
        }
        let notify = try await ServiceProcess("notify", environment: common.merging(notifySettings) { _, new in new })
        let gateway = try await ServiceProcess(
            "gateway",
            environment: common.merging([
                "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_TRACKING_URL": tracking.baseURL, "GATEWAY_NOTIFY_URL": notify.baseURL,
                "GATEWAY_JWT_ISSUER": issuer, "GATEWAY_RATE_LIMIT_TRACKING": "100000/1m", "GATEWAY_RATE_LIMIT_AUTH": "100000/1m",
            ]) { _, new in new }
        )
        return ProcessStack(database: database, auth: auth, tracking: tracking, notify: notify, gateway: gateway)
    }

    /// Stops the gateway, then notify, tracking and auth.
    package func stop() async {
        for process in [gateway, notify, tracking, auth] { await process.stop() }
    }
}

/// The gateway as a client sees it: JSON in, JSON out.
package struct GatewayAPI: Sendable {
    package let base: String

    package init(base: String) {
        self.base = base
    }

    package struct Account: Sendable {
        package var id: String
        package var token: String
        package var email: String
    }

    /// An answer other than the one expected.
    package struct UnexpectedAnswer: Error, CustomStringConvertible {
        package var description: String
    }

    package func call(
        _ method: HTTPMethod,
        _ path: String,
        token: String? = nil,
        json: Any? = nil,
        headers: [(String, String)] = []
    ) async throws -> (status: Int, body: [String: Any]) {
        try await jsonRequest(method, base + path, token: token, json: json, headers: headers)
    }

    package func expect(
        _ status: Int,
        _ method: HTTPMethod,
        _ path: String,
        token: String? = nil,
        json: Any? = nil,
        headers: [(String, String)] = []
    ) async throws -> [String: Any] {
        let answer = try await call(method, path, token: token, json: json, headers: headers)
        guard answer.status == status else {
            throw UnexpectedAnswer(description: "\(method.rawValue) \(path): \(answer.status) \(answer.body), not \(status)")
        }
        return answer.body
    }

    /// An account with `role`, made through auth's admin API with the service token, signed in.
    package func account(_ name: String, role: String) async throws -> Account {
        let email = "\(name)-\(UUID().uuidString.prefix(6))@example.com"
        let user = try await expect(
            200,
            .POST,
            "/auth/v1/admin/users",
            json: [
                "email": email, "password": "correct horse 1", "email_confirm": true, "app_metadata": ["role": role],
            ],
            headers: [("X-Splash-Service-Token", ProcessStack.serviceToken)]
        )
        let session = try await expect(200, .POST, "/auth/v1/token?grant_type=password", json: ["email": email, "password": "correct horse 1"])
        return Account(id: user["id"] as! String, token: session["access_token"] as! String, email: email)
    }
}

/// `tracking-simulator` with only drivers, `speed` times real time, a position every `interval`
/// seconds, its random choices from `seed`.
package final class SimulatorProcess: Sendable {
    package let process: ChildProcess
    package let output: CapturedOutput

    /// - Parameter serviceToken: what auth accepts for its admin API, where the drivers' accounts are made.
    package init(
        gateway: String,
        drivers: Int,
        speed: Double,
        interval: Double,
        seed: UInt64,
        serviceToken: String = ProcessStack.serviceToken
    ) throws {
        let binary = builtExecutable("tracking-simulator")
        output = try CapturedOutput()
        process = ProcessCommand(
            binary,
            ["--gateway", gateway, "--drivers", String(drivers), "--speed", String(speed), "--interval", String(interval), "--seed", String(seed)],
            environment: ["AUTH_SERVICE_TOKEN": serviceToken, "LOG_COLOR": "never"]
        ).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        try process.run()
    }

    package func stop() {
        if process.isRunning { ProcessTree.kill(process.processIdentifier) }
    }
}
