import Foundation
import LocalStack
import NIOHTTP1
import Testing
import TestSupport

/// The gateway as a client sees it: JSON in, JSON out.
struct GatewayAPI: Sendable {
    let base: String

    struct Account: Sendable {
        var id: String
        var token: String
    }

    func call(_ method: HTTPMethod, _ path: String, token: String? = nil, json: Any? = nil, headers: [(String, String)] = []) async throws -> (status: Int, body: [String: Any]) {
        try await jsonRequest(method, base + path, token: token, json: json, headers: headers)
    }

    func expect(_ status: Int, _ method: HTTPMethod, _ path: String, token: String? = nil, json: Any? = nil, headers: [(String, String)] = []) async throws -> [String: Any] {
        let answer = try await call(method, path, token: token, json: json, headers: headers)
        try #require(answer.status == status, "\(method.rawValue) \(path): \(answer.status) \(answer.body)")
        return answer.body
    }

    /// An account with `role`, made through auth's admin API with the service token, signed in.
    func account(_ name: String, role: String) async throws -> Account {
        let email = "\(name)-\(UUID().uuidString.prefix(6))@example.com"
        let user = try await expect(200, .POST, "/auth/v1/admin/users", json: [
            "email": email, "password": "correct horse 1", "email_confirm": true, "app_metadata": ["role": role],
        ], headers: [("X-Splash-Service-Token", ProcessStack.serviceToken)])
        let session = try await expect(200, .POST, "/auth/v1/token?grant_type=password", json: ["email": email, "password": "correct horse 1"])
        return Account(id: user["id"] as! String, token: session["access_token"] as! String)
    }
}

/// `tracking-simulator` with only drivers, `speed` times real time, a position every `interval`
/// seconds, its random choices from `seed`.
final class SimulatorProcess: Sendable {
    let process: ChildProcess
    let output: CapturedOutput

    init(gateway: String, drivers: Int, speed: Double, interval: Double, seed: UInt64) throws {
        let binary = builtExecutable("tracking-simulator")
        output = try CapturedOutput()
        process = ProcessCommand(binary, ["--gateway", gateway, "--drivers", String(drivers), "--speed", String(speed), "--interval", String(interval), "--seed", String(seed)],
                                 environment: ["AUTH_SERVICE_TOKEN": ProcessStack.serviceToken, "LOG_COLOR": "never"]).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        try process.run()
    }

    func stop() {
        if process.isRunning { ProcessTree.kill(process.processIdentifier) }
    }
}
