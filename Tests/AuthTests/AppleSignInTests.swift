import Crypto
import Foundation
import Hummingbird
import Identity
import ServiceKit
import Synchronization
import TestSupport
import Testing
import _CryptoExtras

@testable import Auth

/// Sign in with Apple against a key set this test serves on loopback, with tokens signed by keys
/// it made: a new account, the same one again, linking only to a proven address, and every refusal.
@Suite("Sign in with Apple")
struct AppleSignInTests {
    static let bundleID = "com.splash.edit"

    /// Apple's side, on loopback: the key set (which a test can rotate) and tokens signed with it.
    final class FakeApple: Sendable {
        let keys = Mutex<[(id: String, key: _RSA.Signing.PrivateKey)]>([])
        let fetches = Mutex(0)
        let server = Mutex<TestServer?>(nil)

        var keysURL: String { "http://127.0.0.1:\(server.withLock { $0?.port ?? 0 })/auth/keys" }

        static func start() async throws -> FakeApple {
            let apple = FakeApple()
            try apple.addKey("key-1")
            let router = Router()
            router.get("auth/keys") { _, _ -> Response in
                apple.fetches.withLock { $0 += 1 }
                let entries = try apple.keys.withLock { keys in
                    try keys.map { entry in
                        let primitives = try entry.key.publicKey.getKeyPrimitives()
                        return
                            #"{"kty":"RSA","kid":"\#(entry.id)","use":"sig","alg":"RS256","n":"\#(Base64URL.encode(primitives.modulus))","e":"\#(Base64URL.encode(primitives.publicExponent))"}"#
                    }
                }
                return Response(
                    status: .ok,
                    headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"keys":[\#(entries.joined(separator: ","))]}"#))
                )
            }
            let server = try await TestServer.start(router, label: "fake-apple")
            apple.server.withLock { $0 = server }
            return apple
        }

        func addKey(_ id: String) throws {
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            keys.withLock { $0.append((id, key)) }
        }

        /// An identity token as Apple writes one; `overrides` replace claims (`nil` drops one).
        func token(
            subject: String = "001234.\(UUID().uuidString.prefix(12)).0987",
            email: String? = nil,
            nonce: String? = nil,
            keyID: String = "key-1",
            signingKey: _RSA.Signing.PrivateKey? = nil,
            overrides: [String: Any?] = [:]
        ) throws -> String {
            let now = Int(Date().timeIntervalSince1970)
            var claims: [String: Any] = [
                "iss": "https://appleid.apple.com", "aud": AppleSignInTests.bundleID, "exp": now + 600, "iat": now, "sub": subject,
                "email_verified": "true", "is_private_email": "false", "auth_time": now,
            ]
            if let email { claims["email"] = email }
            if let nonce { claims["nonce"] = SHA256.hash(data: Data(nonce.utf8)).map { String(format: "%02x", $0) }.joined() }
            for (name, value) in overrides { claims[name] = value ?? nil }
            let header = Base64URL.encode(try JSONSerialization.data(withJSONObject: ["alg": "RS256", "kid": keyID]))
            let payload = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))
            let key = try signingKey ?? keys.withLock { keys in try #require(keys.first { $0.id == keyID }?.key) }
            let signature = try key.signature(for: Data("\(header).\(payload)".utf8), padding: .insecurePKCS1v1_5)
            return "\(header).\(payload).\(Base64URL.encode(signature.rawRepresentation))"
        }
    }

    func settings(_ apple: FakeApple) -> [String: String] {
        ["AUTH_APPLE_JWKS_URL": apple.keysURL, "AUTH_APPLE_CLIENT_IDS": "com.other.app,\(Self.bundleID)"]
    }

    func signIn(_ auth: AuthHarness, _ token: String, nonce: String? = nil) async throws -> TestResponse {
        var body = ["provider": "apple", "id_token": token]
        if let nonce { body["nonce"] = nonce }
        return try await auth.call(.post, "/token?grant_type=id_token", json: body)
    }

    @Test func aFirstSignInMakesAnAccountAndTheNextFindsIt() async throws {
        let apple = try await FakeApple.start()
        try await AuthHarness.with(settings(apple)) { auth in
            let email = "relay-\(UUID().uuidString.prefix(8).lowercased())@privaterelay.appleid.com"
            let subject = "001234.\(UUID().uuidString.prefix(12)).0987"
            let first = try await signIn(auth, try apple.token(subject: subject, email: email, nonce: "raw-nonce-1"), nonce: "raw-nonce-1")
            let session = try Session(first)
            let user = try #require(try first.json()["user"] as? [String: Any])
            #expect(session.email == email && user["email_confirmed_at"] is String)
            let identities = try #require(user["identities"] as? [[String: Any]])
            #expect(identities.map { $0["provider"] as? String } == ["apple"])
            #expect(identities.first?["id"] as? String == subject)
            #expect((identities.first?["identity_data"] as? [String: Any])?["is_private_email"] as? Bool == false)
            #expect((user["app_metadata"] as? [String: Any])?["providers"] as? [String] == ["apple"])
            // Later sign-ins may carry no email: the Apple id finds the account.
            let again = try Session(try await signIn(auth, try apple.token(subject: subject)))
            #expect(again.userID == session.userID)
            #expect(try await auth.call(.get, "/user", bearer: again.accessToken).status == 200)
            #expect(try await auth.call(.get, "/settings").json()["external"].flatMap { ($0 as? [String: Any])?["apple"] as? Bool } == true)
        }
    }

    @Test func anAppleIdLinksOnlyToAnAccountWhoseAddressWasProven() async throws {
        let apple = try await FakeApple.start()
        try await AuthHarness.with(settings(apple)) { auth in
            // Auto-confirmed at sign-up, never proven: refused, the account untouched.
            let unproven = try await auth.signUp()
            let refused = try await signIn(auth, try apple.token(email: unproven.email))
            #expect(refused.status == 422 && refused.headers["x-sb-error-code"] == "email_exists")
            #expect(try await auth.database.count("auth.identities", where: "provider = 'apple'") == 0)

            // Proven by a mailed code: linked, the same account, both identities listed.
            #expect(try await auth.call(.post, "/otp", json: ["email": unproven.email]).status == 200)
            let code = try #require(try await auth.mail(to: unproven.email).first?.code)
            _ = try Session(try await auth.call(.post, "/verify", json: ["type": "magiclink", "email": unproven.email, "token": code]))
            let linked = try await signIn(auth, try apple.token(email: unproven.email.uppercased()))
            #expect(try Session(linked).userID == unproven.userID)
            let user = try #require(try linked.json()["user"] as? [String: Any])
            #expect((user["identities"] as? [[String: Any]])?.compactMap { $0["provider"] as? String } == ["email", "apple"])
            #expect((user["app_metadata"] as? [String: Any])?["providers"] as? [String] == ["email", "apple"])
            // The password still works beside it.
            #expect(try await auth.signIn(unproven.email).status == 200)
        }
    }

    @Test func everyForgedExpiredOrMisdirectedTokenIsRefused() async throws {
        let apple = try await FakeApple.start()
        try await AuthHarness.with(settings(apple)) { auth in
            let email = AuthHarness.uniqueEmail("apple")
            let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let now = Int(Date().timeIntervalSince1970)
            let refusals: [(String, String?)] = [
                (try apple.token(email: email, signingKey: stranger), nil),
                (try apple.token(email: email, overrides: ["exp": now - 120]), nil),
                (try apple.token(email: email, overrides: ["aud": "com.someone.else"]), nil),
                (try apple.token(email: email, overrides: ["iss": "https://evil.example"]), nil),
                (try apple.token(email: email, nonce: "the app's nonce"), "another nonce"),
                (try apple.token(email: email, nonce: "the app's nonce"), nil),
                (try apple.token(email: email), "a nonce the token does not carry"),
                (try apple.token(email: email, keyID: "key-1", overrides: ["sub": nil]), nil),
                ("not.a.jwt", nil),
                ("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", nil),
            ]
            for (index, (token, nonce)) in refusals.enumerated() {
                let response = try await signIn(auth, token, nonce: nonce)
                #expect(response.status == 400 && response.headers["x-sb-error-code"] == "bad_jwt", "refusal \(index): \(response.text)")
            }
            #expect(try await auth.count("users") == 0)
            // The right nonce passes.
            #expect(try await signIn(auth, try apple.token(email: email, nonce: "n-1"), nonce: "n-1").status == 200)
        }
    }

    @Test func anUnknownKeySendsForTheSetAgainButNotForEveryForgedKid() async throws {
        let apple = try await FakeApple.start()
        try await AuthHarness.with(settings(apple)) { auth in
            #expect(try await signIn(auth, try apple.token(email: AuthHarness.uniqueEmail("k1"))).status == 200)
            let fetched = apple.fetches.withLock { $0 }
            // Apple rotates: a token signed with the new key is read after one more fetch (a
            // second after the last, the least time between two).
            try apple.addKey("key-2")
            try await Task.sleep(for: .milliseconds(1_200))
            #expect(try await signIn(auth, try apple.token(email: AuthHarness.uniqueEmail("k2"), keyID: "key-2")).status == 200)
            #expect(apple.fetches.withLock { $0 } == fetched + 1)
            // A flood of made-up kids fetches at most once a second.
            let forger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let forged = try (0..<5).map { try apple.token(keyID: "forged-\($0)", signingKey: forger) }
            for token in forged {
                #expect(try await signIn(auth, token).status == 400)
            }
            #expect(apple.fetches.withLock { $0 } <= fetched + 2)
        }
    }

    @Test func withoutClientIdsAppleIsOff() async throws {
        let apple = try await FakeApple.start()
        try await AuthHarness.with(["AUTH_APPLE_JWKS_URL": apple.keysURL]) { auth in
            let response = try await signIn(auth, try apple.token(email: AuthHarness.uniqueEmail("off")))
            #expect(response.status == 400 && response.headers["x-sb-error-code"] == "provider_disabled")
            #expect(try await auth.call(.get, "/settings").json()["external"].flatMap { ($0 as? [String: Any])?["apple"] as? Bool } == false)
        }
        // Apple's keys over plain HTTP only from loopback (a test's server); anywhere else, auth does not start.
        let key = SigningKey.generate().pem
        for (url, accepted) in [("http://apple.example/keys", false), ("https://apple.example/keys", true), ("http://127.0.0.1:9/keys", true)] {
            let reader = ConfigurationReader([
                "AUTH_JWT_KEY": key, "DATABASE_URL": "postgres://u:p@localhost/db", "KAFKA_BROKERS": "127.0.0.1:9092", "AUTH_APPLE_JWKS_URL": url,
            ])
            var refused: String?
            do { _ = try AuthConfiguration(from: reader) } catch { refused = error.variable }
            #expect((refused == "AUTH_APPLE_JWKS_URL") == !accepted, "\(url): \(refused ?? "accepted")")
        }
    }
}
