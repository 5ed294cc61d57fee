import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import HTTPTypes
import Identity
import Kafka
import LocalStack
import Logging
import PostgresNIO
import ServiceKit
import TestSupport

@testable import Auth

/// One running auth service for a test: its own database (reached, like in production, as a role
/// that owns the `auth` schema and nothing else, so row-level security applies), the test Kafka cluster, a
/// fresh signing key and bcrypt cost 4 unless the test says otherwise.
struct AuthHarness: Sendable {
    let app: RunningApplication
    let database: TestDatabase
    let key: SigningKey
    let kafka: KafkaEmbeddedCluster
    /// The login role auth connects as, owner of the `auth` schema; one per test database, since
    /// roles are cluster-wide and other suites create roles of their own concurrently.
    let role: String

    static let rolePassword = ServiceHarness.rolePassword("auth")

    /// The environment auth gets; `overrides` replace or add variables.
    static func with<Result: Sendable>(
        _ overrides: [String: String] = [:],
        _ body: @Sendable (AuthHarness) async throws -> Result
    ) async throws -> Result {
        do {
            return try await run(overrides, body)
        } catch let error as PSQLError {
            // PSQLError hides its details from `description`; a failing test needs them.
            throw DatabaseFailure(details: String(reflecting: error))
        }
    }

    struct DatabaseFailure: Error, CustomStringConvertible {
        var details: String
        var description: String { details }
    }

    private static func run<Result: Sendable>(
        _ overrides: [String: String],
        _ body: @Sendable (AuthHarness) async throws -> Result
    ) async throws -> Result {
        let key = SigningKey.generate()
        let service = try await ServiceHarness.prepare(
            .init(schema: "auth"),
            settings: [
                "AUTH_JWT_KEY": key.pem,
                "AUTH_JWT_ISSUER": ServiceHarness.issuer,
                "AUTH_BCRYPT_COST": "4",
                "AUTH_RATE_LIMIT_TOKEN": "100000/1m",
                "AUTH_RATE_LIMIT_SIGNUP": "100000/1m",
                "AUTH_RATE_LIMIT_FAILED_SIGN_INS": "100000/1m",
                "AUTH_CONSUMER_GROUP": "auth-test-\(UUID().uuidString.prefix(8))",
            ],
            overrides: overrides
        )
        let database = service.database!
        let kafka = try await TestKafka.shared.running()
        return try await service.run("auth", AuthConfiguration.self, logger: ServiceHarness.quietLogger("auth-test"), build: buildApplication) {
            app in
            try await body(AuthHarness(app: app, database: database, key: key, kafka: kafka, role: service.databaseRole!))
        }
    }

    // MARK: Calls

    /// A JSON request to `/auth/v1<path>` with the headers a supabase client sends.
    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        json: Any? = nil,
        bearer: String? = nil,
        apiVersion: Bool = false,
        headers: [(String, String)] = []
    ) async throws -> TestResponse {
        var all = headers + [("apikey", "anon-key"), ("X-Client-Info", "supabase-swift/2.0.0")]
        if let bearer { all.append(("Authorization", "Bearer \(bearer)")) }
        if apiVersion { all.append(("X-Supabase-Api-Version", "2024-01-01")) }
        var body: HTTPClientRequest.Body?
        if let json {
            all.append(("Content-Type", "application/json"))
            body = .bytes(try JSONSerialization.data(withJSONObject: json))
        }
        return try await app.request(method, "/auth/v1" + path, headers: all, body: body)
    }

    /// Signs up `email` and returns the Session, failing the test on any other answer.
    func signUp(_ email: String = AuthHarness.uniqueEmail(), password: String = "correct horse 1", data: [String: Any] = [:]) async throws -> Session
    {
        let response = try await call(.post, "/signup", json: ["email": email, "password": password, "data": data])
        return try Session(response, expecting: 200)
    }

    func signIn(_ email: String, password: String = "correct horse 1") async throws -> TestResponse {
        try await call(.post, "/token?grant_type=password", json: ["email": email, "password": password])
    }

    func refresh(_ refreshToken: String) async throws -> TestResponse {
        try await call(.post, "/token?grant_type=refresh_token", json: ["refresh_token": refreshToken])
    }

    static func uniqueEmail(_ name: String = "user") -> String {
        "\(name)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
    }

    /// Verifies tokens as any Splash service would.
    var verifier: AccessTokenVerifier {
        AccessTokenVerifier(keys: [key.verificationKey], issuer: ServiceHarness.issuer)
    }

    /// Signs tokens with the service's key (to forge expired or odd ones).
    var signer: AccessTokenSigner {
        AccessTokenSigner(key: key)
    }

    // MARK: Database

    /// Makes `userID` an admin, as an operator would with SQL.
    func makeAdmin(_ userID: String) async throws {
        try await withDatabase { client in
            try await client.query("UPDATE auth.users SET role = 'admin' WHERE id = \(UUID(uuidString: userID)!)")
        }
    }

    /// Runs `body` with a superuser connection pool to the service's database.
    @discardableResult
    func withDatabase<Result: Sendable>(_ body: @Sendable (PostgresClient) async throws -> Result) async throws -> Result {
        try await database.withClient(body)
    }

    /// Rows in `auth.<table>` (as the superuser, so row-level security does not hide any).
    func count(_ table: String) async throws -> Int {
        try await database.count("auth.\(table)")
    }

    // MARK: Mail

    /// A mail the catcher kept, as a person reads it: the code alone on its line, the link.
    struct CaughtMail: Sendable {
        var subject: String
        var text: String
        var html: String

        var code: String? {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.count == 6 && $0.allSatisfy(\.isNumber) }
        }

        var link: String? {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first { $0.hasPrefix("http") }
        }
    }

    /// The mail caught for `address` (newest first), once there are at least `count`.
    func mail(to address: String, count: Int = 1) async throws -> [CaughtMail] {
        try await eventually("\(count) mail(s) to \(address)") {
            try await database.count("auth.mail_outbox", where: "to_address = '\(address)' AND status = 'caught'") >= count
        }
        return try await withDatabase { client in
            let rows = try await client.query(
                """
                SELECT subject, text_body, html_body FROM auth.mail_outbox WHERE to_address = \(address) AND status = 'caught' ORDER BY id DESC
                """
            )
            var mails: [CaughtMail] = []
            for try await (subject, text, html) in rows.decode((String, String, String).self) {
                mails.append(CaughtMail(subject: subject, text: text, html: html))
            }
            return mails
        }
    }

    // MARK: Events

    /// Waits until the relay has published every outbox row, then reads `auth.users` from the
    /// beginning and returns the events keyed by `userID`, in order.
    func publishedEvents(of userID: String) async throws -> [EventEnvelope] {
        try await database.waitUntilOutboxIsPublished(schema: "auth")
        return try await TestKafka.shared.events(on: TopicCatalog.authUsers.name, key: userID)
    }
}

/// A Session as a client decodes it.
struct Session: Sendable {
    var accessToken: String
    var refreshToken: String
    var userID: String
    var email: String

    init(_ response: TestResponse, expecting status: Int = 200) throws {
        guard response.status == status else { throw UnexpectedResponse(response: response) }
        let object = try response.json()
        guard let access = object["access_token"] as? String, let refresh = object["refresh_token"] as? String,
            let user = object["user"] as? [String: Any], let id = user["id"] as? String, let email = user["email"] as? String
        else { throw UnexpectedResponse(response: response) }
        accessToken = access
        refreshToken = refresh
        userID = id
        self.email = email
    }
}

struct UnexpectedResponse: Error, CustomStringConvertible {
    var response: TestResponse
    var description: String { "unexpected response \(response.status): \(response.text)" }
}
