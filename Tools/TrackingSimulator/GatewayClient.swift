import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceKit

/// The gateway as the apps call it: JSON in, JSON out.
struct GatewayClient: Sendable {
    let base: String
    let http: HTTPClient

    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        func json() -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        }

        var array: [[String: Any]] {
            (try? JSONSerialization.jsonObject(with: body)) as? [[String: Any]] ?? []
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Refused: Error, CustomStringConvertible {
        var call: String
        var answer: Answer
        var description: String { "\(call): \(answer.status) \(answer.text.prefix(300))" }
    }

    func call(_ method: HTTPMethod, _ path: String, token: String? = nil, json: Any? = nil, headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json)))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 8 << 20)
        return Answer(
            status: Int(response.status.code),
            headers: Dictionary(response.headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 }),
            body: Data(buffer: body)
        )
    }

    /// `call`, failing unless the status is one of `expected`.
    func expect(
        _ expected: Set<Int>,
        _ method: HTTPMethod,
        _ path: String,
        token: String? = nil,
        json: Any? = nil,
        headers: [(String, String)] = []
    ) async throws -> Answer {
        let answer = try await call(method, path, token: token, json: json, headers: headers)
        guard expected.contains(answer.status) else { throw Refused(call: "\(method.rawValue) \(path)", answer: answer) }
        return answer
    }
}

/// A simulated person's account: made once through auth's admin API with the service token, its
/// password derived from that token (so a restarted simulator signs in again), then signed in like
/// the apps; the session is refreshed before it expires.
actor SimulatedAccount {
    let email: String
    let role: String
    private let password: String
    private let gateway: GatewayClient
    private var token: String?
    private var refreshToken: String?
    private var expiresAt = Date.distantPast
    private(set) var id: String?

    init(email: String, role: String, serviceToken: String, gateway: GatewayClient) {
        self.email = email
        self.role = role
        self.gateway = gateway
        let mac = HMAC<SHA256>.authenticationCode(for: Data(email.utf8), using: SymmetricKey(data: Data(serviceToken.utf8)))
        password = Data(mac).hexEncoded
    }

    /// Makes the account unless it exists.
    func create(serviceToken: String) async throws {
        _ = try await gateway.expect(
            [200, 422],
            .POST,
            "/auth/v1/admin/users",
            json: [
                "email": email, "password": password, "email_confirm": true, "app_metadata": ["role": role],
                "user_metadata": ["username": email.split(separator: "@")[0].replacingOccurrences(of: "-", with: "_")],
            ],
            headers: [("X-Splash-Service-Token", serviceToken)]
        )
    }

    /// A valid access token, signing in or refreshing as needed.
    func accessToken() async throws -> String {
        if let token, expiresAt.timeIntervalSinceNow > 60 { return token }
        var session: [String: Any]?
        if let refreshToken {
            let refreshed = try await gateway.call(.POST, "/auth/v1/token?grant_type=refresh_token", json: ["refresh_token": refreshToken])
            if refreshed.status == 200 { session = refreshed.json() }
        }
        if session == nil {
            session = try await gateway.expect([200], .POST, "/auth/v1/token?grant_type=password", json: ["email": email, "password": password])
                .json()
        }
        guard let session, let access = session["access_token"] as? String else {
            throw GatewayClient.Refused(call: "sign-in", answer: .init(status: 0, headers: [:], body: Data()))
        }
        token = access
        refreshToken = session["refresh_token"] as? String
        expiresAt = Date().addingTimeInterval(TimeInterval(session["expires_in"] as? Int ?? 3_600))
        id = (session["user"] as? [String: Any])?["id"] as? String
        return access
    }
}
