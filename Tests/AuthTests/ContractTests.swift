import AsyncHTTPClient
import Foundation
import HTTPTypes
import TestSupport
import Testing
import Yams

@testable import Auth

/// Each endpoint of Services/Auth/openapi.yaml with its exact keys and types, and each error code
/// with both error shapes. `make contract SERVICE=auth` runs this suite alone.
@Suite("auth contract (GoTrue wire format)", .serialized)
struct ContractTests {
    static let sessionKeys: Set<String> = ["access_token", "token_type", "expires_in", "expires_at", "refresh_token", "user"]
    static let userKeys: Set<String> = [
        "id", "aud", "role", "email", "phone", "app_metadata", "user_metadata", "identities", "created_at", "updated_at",
        "is_anonymous", "email_confirmed_at", "confirmed_at", "last_sign_in_at",
    ]

    func expectSession(_ response: TestResponse) throws {
        #expect(response.status == 200, "\(response.text)")
        let session = try response.json()
        #expect(Set(session.keys) == Self.sessionKeys)
        #expect(session["access_token"] is String)
        #expect(session["token_type"] as? String == "bearer")
        #expect(session["expires_in"] as? Int == 3_600)
        #expect(session["expires_at"] is Int)
        #expect((session["refresh_token"] as? String)?.count == 43)
        try expectUser(try #require(session["user"] as? [String: Any]))
    }

    func expectUser(_ user: [String: Any]) throws {
        #expect(Set(user.keys) == Self.userKeys)
        #expect(UUID(uuidString: user["id"] as? String ?? "") != nil)
        #expect(user["aud"] as? String == "authenticated")
        #expect(user["role"] as? String == "authenticated")
        #expect(user["phone"] as? String == "")
        #expect(user["is_anonymous"] as? Bool == false)
        let app = try #require(user["app_metadata"] as? [String: Any])
        #expect(app["provider"] as? String == "email")
        #expect(app["providers"] as? [String] == ["email"])
        #expect(["customer", "driver", "restaurant", "admin"].contains(app["role"] as? String ?? ""))
        #expect(app["onboarded"] is Bool)
        #expect(user["user_metadata"] is [String: Any])
        for key in ["created_at", "updated_at", "email_confirmed_at", "confirmed_at", "last_sign_in_at"] {
            let text = try #require(user[key] as? String)
            #expect(ClientTimestamp.parse(text) != nil, "\(key) = \(text)")
            #expect(text.hasSuffix("Z") && text.contains("."), "RFC 3339 UTC with fractional seconds: \(text)")
        }
        let identities = try #require(user["identities"] as? [[String: Any]])
        #expect(identities.count == 1)
        let identity = try #require(identities.first)
        #expect(
            Set(identity.keys) == [
                "identity_id", "id", "user_id", "identity_data", "provider", "last_sign_in_at", "created_at", "updated_at", "email",
            ]
        )
        #expect(identity["provider"] as? String == "email")
        #expect(identity["user_id"] as? String == user["id"] as? String)
        let data = try #require(identity["identity_data"] as? [String: Any])
        #expect(data["email"] as? String == user["email"] as? String)
        #expect(data["sub"] as? String == user["id"] as? String)
    }

    /// Both error shapes of one failing call, and the header they share.
    func expectError(
        _ expectedStatus: Int,
        _ code: String,
        _ call: @Sendable (_ apiVersion: Bool) async throws -> TestResponse
    ) async throws {
        let legacy = try await call(false)
        #expect(legacy.status == expectedStatus, "\(code): \(legacy.text)")
        #expect(legacy.headers["x-sb-error-code"] == code)
        let old = try legacy.json()
        #expect(Set(old.keys).isSuperset(of: ["code", "error_code", "msg"]), "\(old)")
        #expect(old["code"] as? Int == expectedStatus)
        #expect(old["error_code"] as? String == code)
        #expect((old["msg"] as? String)?.isEmpty == false)

        let versioned = try await call(true)
        #expect(versioned.status == expectedStatus, "\(code): \(versioned.text)")
        #expect(versioned.headers["x-sb-error-code"] == code)
        #expect(versioned.headers["x-supabase-api-version"] == "2024-01-01")
        let new = try versioned.json()
        #expect(Set(new.keys).isSuperset(of: ["code", "message"]), "\(new)")
        #expect(new["code"] as? String == code)
        #expect((new["message"] as? String)?.isEmpty == false)
        #expect(new["error_code"] == nil && new["msg"] == nil)
    }

    @Test func signUpAnswersASessionWithEveryRequiredField() async throws {
        try await AuthHarness.with { auth in
            let email = AuthHarness.uniqueEmail("Ana")
            let response = try await auth.call(
                .post,
                "/signup",
                json: [
                    "email": email, "password": "correct horse 1", "data": ["username": "ana_\(UUID().uuidString.prefix(6))"],
                    "code_challenge": "abc", "code_challenge_method": "s256", "gotrue_meta_security": [:] as [String: String],
                ],
                bearer: "anon-key-not-a-jwt"
            )
            try expectSession(response)
            let user = try #require(try response.json()["user"] as? [String: Any])
            #expect(user["email"] as? String == email.lowercased())
            #expect((user["app_metadata"] as? [String: Any])?["role"] as? String == "customer")
            #expect((user["app_metadata"] as? [String: Any])?["onboarded"] as? Bool == false)
        }
    }

    @Test func signUpErrors() async throws {
        try await AuthHarness.with { auth in
            let taken = try await auth.signUp(data: ["username": "taken_\(UUID().uuidString.prefix(6))"])
            try await expectError(422, "user_already_exists") { version in
                try await auth.call(.post, "/signup", json: ["email": taken.email.uppercased(), "password": "another good one"], apiVersion: version)
            }
            try await expectError(422, "weak_password") { version in
                try await auth.call(.post, "/signup", json: ["email": AuthHarness.uniqueEmail(), "password": "short"], apiVersion: version)
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/signup", json: ["email": "not-an-email", "password": "correct horse 1"], apiVersion: version)
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(
                    .post,
                    "/signup",
                    json: ["email": AuthHarness.uniqueEmail(), "password": String(repeating: "é", count: 37)],
                    apiVersion: version
                )
            }
            let username = try await auth.call(.get, "/user", bearer: taken.accessToken)
            let name = try #require((try username.json()["user_metadata"] as? [String: Any])?["username"] as? String)
            try await expectError(422, "username_taken") { version in
                try await auth.call(
                    .post,
                    "/signup",
                    json: ["email": AuthHarness.uniqueEmail(), "password": "correct horse 1", "data": ["username": name.uppercased()]],
                    apiVersion: version
                )
            }
        }
    }

    @Test func weakPasswordsSayWhy() async throws {
        try await AuthHarness.with(["AUTH_PASSWORD_REQUIRED_CHARACTERS": "letters-digits"]) { auth in
            func reasons(_ password: String) async throws -> [String] {
                let response = try await auth.call(.post, "/signup", json: ["email": AuthHarness.uniqueEmail(), "password": password])
                #expect(response.status == 422)
                return try #require((try response.json()["weak_password"] as? [String: Any])?["reasons"] as? [String])
            }
            let cases: [(String, [String])] = [
                ("abc1", ["length"]), ("onlyletters", ["characters"]), ("password1", ["pwned"]), ("abcdefgh", ["characters", "pwned"]),
            ]
            for (password, expected) in cases {
                let found = try await reasons(password)
                #expect(found == expected, "\(password)")
            }
        }
    }

    @Test func passwordSignInAnswersASession() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            try expectSession(try await auth.signIn(session.email.uppercased()))
            try await expectError(400, "invalid_credentials") { version in
                try await auth.call(
                    .post,
                    "/token?grant_type=password",
                    json: ["email": session.email, "password": "wrong password!"],
                    apiVersion: version
                )
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/token?grant_type=password", json: ["email": session.email], apiVersion: version)
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/token?grant_type=magic", json: ["email": session.email], apiVersion: version)
            }
        }
    }

    @Test func refreshAnswersANewSession() async throws {
        try await AuthHarness.with(["AUTH_REFRESH_REUSE_INTERVAL": "0s"]) { auth in
            let session = try await auth.signUp()
            let refreshed = try await auth.refresh(session.refreshToken)
            try expectSession(refreshed)
            #expect(try refreshed.json()["refresh_token"] as? String != session.refreshToken)
            try await expectError(400, "refresh_token_not_found") { version in
                try await auth.call(
                    .post,
                    "/token?grant_type=refresh_token",
                    json: ["refresh_token": String(repeating: "A", count: 43)],
                    apiVersion: version
                )
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/token?grant_type=refresh_token", json: ["refresh_token": ""], apiVersion: version)
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/token?grant_type=refresh_token", json: ["refresh_token": "x' OR 1=1 --"], apiVersion: version)
            }
            // A grandparent of the active token, after the (zero) reuse interval: the session is
            // revoked (so each shape needs a session of its own).
            try await expectError(400, "refresh_token_already_used") { version in
                let spent = try await auth.signUp()
                let child = try Session(try await auth.refresh(spent.refreshToken))
                _ = try Session(try await auth.refresh(child.refreshToken))
                return try await auth.call(.post, "/token?grant_type=refresh_token", json: ["refresh_token": spent.refreshToken], apiVersion: version)
            }
        }
    }

    @Test func getUserAndItsErrors() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            let response = try await auth.call(.get, "/user", bearer: session.accessToken)
            #expect(response.status == 200)
            try expectUser(try response.json())
            try await expectError(401, "no_authorization") { version in
                try await auth.call(.get, "/user", apiVersion: version)
            }
            try await expectError(403, "bad_jwt") { version in
                try await auth.call(.get, "/user", bearer: session.accessToken + "x", apiVersion: version)
            }
            try await expectError(403, "bad_jwt") { version in
                try await auth.call(.get, "/user", bearer: "anon-key-not-a-jwt", apiVersion: version)
            }
            let logout = try await auth.call(.post, "/logout?scope=local", bearer: session.accessToken)
            #expect(logout.status == 204)
            #expect(logout.body.isEmpty)
            try await expectError(403, "session_not_found") { version in
                try await auth.call(.get, "/user", bearer: session.accessToken, apiVersion: version)
            }
        }
    }

    @Test func anExpiredAccessTokenIsABadJWT() async throws {
        try await AuthHarness.with(["AUTH_ACCESS_TOKEN_TTL": "30s"]) { auth in
            let session = try await auth.signUp()
            let claims = try auth.verifier.verify(session.accessToken)
            var expired = claims
            expired.expiresAt = Int(Date().timeIntervalSince1970) - 1
            let token = try auth.signer.sign(expired)
            try await expectError(403, "bad_jwt") { version in
                try await auth.call(.get, "/user", bearer: token, apiVersion: version)
            }
        }
    }

    @Test func updateUserMergesMetadataAndReportsItsErrors() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp(data: ["theme": "dark", "lang": "en"])
            let name = "ana_\(UUID().uuidString.prefix(6).lowercased())"
            let response = try await auth.call(
                .put,
                "/user",
                json: ["data": ["username": name, "lang": NSNull(), "avatar_url": "https://img.example/a.png"]],
                bearer: session.accessToken
            )
            #expect(response.status == 200, "\(response.text)")
            let user = try response.json()
            try expectUser(user)
            let metadata = try #require(user["user_metadata"] as? [String: String])
            #expect(metadata == ["theme": "dark", "username": name, "avatar_url": "https://img.example/a.png"])

            try await expectError(422, "same_password") { version in
                try await auth.call(.put, "/user", json: ["password": "correct horse 1"], bearer: session.accessToken, apiVersion: version)
            }
            try await expectError(403, "not_admin") { version in
                try await auth.call(.put, "/user", json: ["app_metadata": ["role": "admin"]], bearer: session.accessToken, apiVersion: version)
            }
            let other = try await auth.signUp()
            try await expectError(422, "username_taken") { version in
                try await auth.call(.put, "/user", json: ["data": ["username": name.uppercased()]], bearer: other.accessToken, apiVersion: version)
            }
            try await expectError(422, "email_exists") { version in
                try await auth.call(.put, "/user", json: ["email": session.email], bearer: other.accessToken, apiVersion: version)
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.put, "/user", json: ["data": ["username": "no spaces allowed"]], bearer: other.accessToken, apiVersion: version)
            }
            // A new password works, the old one no longer does.
            let changed = try await auth.call(.put, "/user", json: ["password": "a new good one 2"], bearer: other.accessToken)
            #expect(changed.status == 200)
            #expect(try await auth.signIn(other.email, password: "a new good one 2").status == 200)
            #expect(try await auth.signIn(other.email).status == 400)
        }
    }

    @Test func logoutAnswers204AndValidatesItsScope() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/logout?scope=everything", bearer: session.accessToken, apiVersion: version)
            }
            try await expectError(401, "no_authorization") { version in
                try await auth.call(.post, "/logout", apiVersion: version)
            }
            let response = try await auth.call(.post, "/logout", bearer: session.accessToken)
            #expect(response.status == 204)
            #expect(response.body.isEmpty)
        }
    }

    @Test func theJWKSPublishesTheSigningKey() async throws {
        try await AuthHarness.with { auth in
            let response = try await auth.call(.get, "/.well-known/jwks.json")
            #expect(response.status == 200)
            let keys = try #require(try response.json()["keys"] as? [[String: String]])
            #expect(keys.count == 1)
            let key = try #require(keys.first)
            #expect(Set(key.keys) == ["kty", "crv", "kid", "x", "y", "alg", "use"])
            #expect(key["kty"] == "EC" && key["crv"] == "P-256" && key["alg"] == "ES256" && key["use"] == "sig")
            #expect(key["kid"] == auth.key.id)
        }
    }

    @Test func recentSignUpsAndTheCountArePublicAndShowNoEmail() async throws {
        try await AuthHarness.with { auth in
            var names: [String] = []
            for index in 0..<3 {
                let name = "user\(index)_\(UUID().uuidString.prefix(6).lowercased())"
                names.append(name)
                _ = try await auth.signUp(data: ["username": name])
            }
            let recent = try await auth.call(.get, "/users/recent?limit=2")
            #expect(recent.status == 200)
            let entries = try #require(try JSONSerialization.jsonObject(with: recent.body) as? [[String: Any]])
            #expect(entries.map { $0["username"] as? String } == [names[2], names[1]])
            #expect(entries.allSatisfy { Set($0.keys) == ["username", "created_at"] })
            #expect(!recent.text.contains("@"))
            let count = try await auth.call(.get, "/users/count")
            #expect(try count.json() as NSDictionary == ["count": 3])
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.get, "/users/recent?limit=1000", apiVersion: version)
            }
        }
    }

    @Test func onboardingIsIdempotent() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            for _ in 0..<2 {
                let response = try await auth.call(.post, "/user/onboarding", bearer: session.accessToken)
                #expect(response.status == 200)
                #expect((try response.json()["app_metadata"] as? [String: Any])?["onboarded"] as? Bool == true)
            }
            let events = try await auth.publishedEvents(of: session.userID)
            #expect(events.map(\.type) == ["auth.user.registered.v1", "auth.user.onboarding-completed.v1"])
        }
    }

    @Test func onlyAnAdminSetsRoles() async throws {
        try await AuthHarness.with { auth in
            let admin = try await auth.signUp()
            let driver = try await auth.signUp()
            try await expectError(403, "not_admin") { version in
                try await auth.call(
                    .put,
                    "/admin/users/\(driver.userID)/role",
                    json: ["role": "driver"],
                    bearer: admin.accessToken,
                    apiVersion: version
                )
            }
            try await auth.makeAdmin(admin.userID)
            let response = try await auth.call(.put, "/admin/users/\(driver.userID)/role", json: ["role": "driver"], bearer: admin.accessToken)
            #expect(response.status == 200, "\(response.text)")
            #expect((try response.json()["app_metadata"] as? [String: Any])?["role"] as? String == "driver")
            // The driver's next token carries the role.
            let refreshed = try Session(try await auth.refresh(driver.refreshToken))
            #expect(try auth.verifier.verify(refreshed.accessToken).splashRole == "driver")
            try await expectError(404, "user_not_found") { version in
                try await auth.call(.put, "/admin/users/\(UUID())/role", json: ["role": "driver"], bearer: admin.accessToken, apiVersion: version)
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(
                    .put,
                    "/admin/users/\(driver.userID)/role",
                    json: ["role": "emperor"],
                    bearer: admin.accessToken,
                    apiVersion: version
                )
            }
        }
    }

    @Test func anAdminListsEveryUserNewestFirstWithTheirRoles() async throws {
        try await AuthHarness.with { auth in
            let admin = try await auth.signUp()
            let driver = try await auth.signUp()
            let newest = try await auth.signUp()
            try await expectError(403, "not_admin") { version in
                try await auth.call(.get, "/admin/users", bearer: newest.accessToken, apiVersion: version)
            }
            try await auth.makeAdmin(admin.userID)
            _ = try await auth.call(.put, "/admin/users/\(driver.userID)/role", json: ["role": "driver"], bearer: admin.accessToken)
            let response = try await auth.call(.get, "/admin/users?per_page=2", bearer: admin.accessToken)
            #expect(response.status == 200, "\(response.text)")
            #expect(response.headers["x-total-count"] == "3")
            #expect(response.headers["link"]?.contains("page=2&per_page=2>; rel=\"next\"") == true)
            let users = try #require(try response.json()["users"] as? [[String: Any]])
            #expect(users.compactMap { $0["id"] as? String } == [newest.userID, driver.userID])
            #expect(users.compactMap { ($0["app_metadata"] as? [String: Any])?["role"] as? String } == ["customer", "driver"])
            let second = try await auth.call(.get, "/admin/users?page=2&per_page=2", bearer: admin.accessToken)
            #expect((try second.json()["users"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [admin.userID])
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.get, "/admin/users?per_page=0", bearer: admin.accessToken, apiVersion: version)
            }
        }
    }

    /// schemathesis drives every operation as an admin, then the admin API with the service token,
    /// then `/logout` alone (which ends the session the other runs use).
    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        let serviceToken = String(repeating: "c", count: 40)
        try await AuthHarness.with(["AUTH_SERVICE_TOKEN": serviceToken]) { auth in
            let admin = try await auth.signUp()
            try await auth.makeAdmin(admin.userID)
            let base = auth.app.baseURL + "/auth/v1"
            let runs = [
                Schemathesis(
                    service: "Auth",
                    baseURL: base,
                    headers: [("Authorization", "Bearer \(admin.accessToken)")],
                    excludePaths: ["^/logout$"]
                ),
                Schemathesis(service: "Auth", baseURL: base, headers: [("X-Splash-Service-Token", serviceToken)], includePaths: ["^/admin/users$"]),
                Schemathesis(
                    service: "Auth",
                    baseURL: base,
                    headers: [("Authorization", "Bearer \(try await auth.signUp().accessToken)")],
                    includePaths: ["^/logout$"]
                ),
            ]
            for run in runs {
                let report = try await run.run()
                #expect(report.passed, "\(report)")
            }
        }
    }

    /// Every type auth publishes, produced through its API and checked against its JSON Schema.
    @Test func everyEventItPublishesMatchesItsSchema() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp(data: ["username": "schema_\(UUID().uuidString.prefix(6).lowercased())"])
            #expect(
                try await auth.call(
                    .put,
                    "/user",
                    json: ["data": ["username": "renamed_\(UUID().uuidString.prefix(6).lowercased())", "avatar_url": "https://example.com/a.png"]],
                    bearer: session.accessToken
                ).status == 200
            )
            #expect(try await auth.call(.post, "/user/onboarding", bearer: session.accessToken).status == 200)
            #expect(try await auth.call(.delete, "/user", json: ["password": "correct horse 1"], bearer: session.accessToken).status == 204)
            let events = try await auth.publishedEvents(of: session.userID)
            #expect(
                Set(events.map(\.type)) == [
                    "auth.user.registered.v1", "auth.profile.updated.v1", "auth.user.onboarding-completed.v1", "auth.user.deleted.v1",
                ]
            )
            let report = try await EventSchemaCheck.validate(events)
            #expect(report.contains("validated \(events.count) payload(s), 0 failure(s)"), "\(report)")
        }
    }

    @Test func anAdminOrAServiceWithItsTokenReadsOneUserAndNoOneElseDoes() async throws {
        let serviceToken = String(repeating: "r", count: 40)
        try await AuthHarness.with(["AUTH_SERVICE_TOKEN": serviceToken]) { auth in
            let admin = try await auth.signUp()
            let someone = try await auth.signUp()
            try await expectError(403, "not_admin") { version in
                try await auth.call(.get, "/admin/users/\(admin.userID)", bearer: someone.accessToken, apiVersion: version)
            }
            try await expectError(403, "not_admin") { version in
                try await auth.call(
                    .get,
                    "/admin/users/\(someone.userID)",
                    apiVersion: version,
                    headers: [("X-Splash-Service-Token", String(repeating: "x", count: 40))]
                )
            }
            try await auth.makeAdmin(admin.userID)
            let read = try await auth.call(.get, "/admin/users/\(someone.userID)", bearer: admin.accessToken)
            #expect(read.status == 200, "\(read.text)")
            #expect(try read.json()["email"] as? String == someone.email)
            let byService = try await auth.call(.get, "/admin/users/\(someone.userID)", headers: [("X-Splash-Service-Token", serviceToken)])
            #expect(try byService.json()["id"] as? String == someone.userID)
            try await expectError(404, "user_not_found") { version in
                try await auth.call(.get, "/admin/users/\(UUID())", apiVersion: version, headers: [("X-Splash-Service-Token", serviceToken)])
            }
        }
    }

    @Test func anAdminOrAServiceWithItsTokenCreatesAccountsWithTheirRoleAndNoOneElseDoes() async throws {
        let serviceToken = String(repeating: "s", count: 40)
        try await AuthHarness.with(["AUTH_SERVICE_TOKEN": serviceToken]) { auth in
            let admin = try await auth.signUp()
            let someone = try await auth.signUp()
            try await auth.makeAdmin(admin.userID)
            let kitchen = AuthHarness.uniqueEmail("kitchen")
            let username = "kitchen_\(UUID().uuidString.prefix(6))"
            @Sendable func body() -> [String: Any] {
                [
                    "email": kitchen, "password": "correct horse 2", "email_confirm": true, "user_metadata": ["username": username],
                    "app_metadata": ["role": "restaurant"],
                ]
            }
            // Neither a customer's token, nor none, nor a wrong service token.
            try await expectError(403, "not_admin") { version in
                try await auth.call(.post, "/admin/users", json: body(), bearer: someone.accessToken, apiVersion: version)
            }
            #expect(try await auth.call(.post, "/admin/users", json: body()).status == 401)
            try await expectError(403, "not_admin") { version in
                try await auth.call(
                    .post,
                    "/admin/users",
                    json: body(),
                    apiVersion: version,
                    headers: [("X-Splash-Service-Token", String(repeating: "x", count: 40))]
                )
            }
            #expect(try await auth.count("users") == 2)

            // An admin: the account has its role, is not signed in, and can sign in with its password.
            let created = try await auth.call(.post, "/admin/users", json: body(), bearer: admin.accessToken)
            #expect(created.status == 200, "\(created.text)")
            let user = try created.json()
            #expect((user["app_metadata"] as? [String: Any])?["role"] as? String == "restaurant")
            #expect(user["email_confirmed_at"] is String)
            #expect(user["last_sign_in_at"] == nil || user["last_sign_in_at"] is NSNull)
            let signedIn = try Session(try await auth.signIn(kitchen, password: "correct horse 2"))
            #expect(try auth.verifier.verify(signedIn.accessToken).splashRole == "restaurant")
            let events = try await auth.publishedEvents(of: try #require(user["id"] as? String))
            #expect(events.map(\.type) == ["auth.user.registered.v1"])
            try await expectError(422, "email_exists") { version in
                try await auth.call(.post, "/admin/users", json: body(), bearer: admin.accessToken, apiVersion: version)
            }

            // A service with the token, choosing the id, without a password: it cannot sign in with one.
            let id = UUID()
            let owner = AuthHarness.uniqueEmail("owner")
            let service = try await auth.call(
                .post,
                "/admin/users",
                json: ["id": id.uuidString, "email": owner, "email_confirm": true, "app_metadata": ["role": "restaurant"]],
                headers: [("X-Splash-Service-Token", serviceToken)]
            )
            #expect(service.status == 200, "\(service.text)")
            #expect(try service.json()["id"] as? String == id.uuidString.lowercased())
            for password in ["", "correct horse 1", "anything at all"] {
                #expect(try await auth.signIn(owner, password: password).status == 400)
            }
            // The same id again is taken, whatever the email.
            try await expectError(422, "email_exists") { version in
                try await auth.call(
                    .post,
                    "/admin/users",
                    json: ["id": id.uuidString, "email": AuthHarness.uniqueEmail()],
                    apiVersion: version,
                    headers: [("X-Splash-Service-Token", serviceToken)]
                )
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(
                    .post,
                    "/admin/users",
                    json: ["email": AuthHarness.uniqueEmail(), "app_metadata": ["role": "emperor"]],
                    bearer: admin.accessToken,
                    apiVersion: version
                )
            }
            try await expectError(400, "validation_failed") { version in
                try await auth.call(.post, "/admin/users", json: ["email": "not an email"], bearer: admin.accessToken, apiVersion: version)
            }
        }
    }

    @Test func rateLimitsAnswer429WithRetryAfter() async throws {
        try await AuthHarness.with(["AUTH_RATE_LIMIT_SIGNUP": "2/5m"]) { auth in
            _ = try await auth.signUp()
            _ = try await auth.signUp()
            try await expectError(429, "over_request_rate_limit") { version in
                try await auth.call(.post, "/signup", json: ["email": AuthHarness.uniqueEmail(), "password": "correct horse 1"], apiVersion: version)
            }
            let limited = try await auth.call(.post, "/signup", json: ["email": AuthHarness.uniqueEmail(), "password": "correct horse 1"])
            #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 >= 1)
        }
    }

    @Test func everyOperationOfTheOpenAPIDocumentIsServed() async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Services/Auth/openapi.yaml")
        let document = try #require(try Yams.load(yaml: String(contentsOf: url, encoding: .utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(paths.count == 19)
        let operations = paths.flatMap { path, methods in methods.keys.map { (path, $0) } }
        try await AuthHarness.with { auth in
            for (path, method) in operations {
                if path == "/verify", method == "get" {
                    // The mailed link answers a redirect, which is not followed here.
                    let link = HTTPClientRequest(url: auth.app.baseURL + "/auth/v1/verify")
                    #expect(try await CodeFlowTests.browser.execute(link, timeout: .seconds(10)).status.code == 303)
                    continue
                }
                do {
                    let concrete = path.replacingOccurrences(of: "{id}", with: UUID().uuidString)
                    let response = try await auth.call(HTTPRequest.Method(method.uppercased())!, concrete, json: [:] as [String: String])
                    #expect(response.status != 405 && response.headers["x-sb-error-code"] != "not_found", "\(method) \(path): \(response.status)")
                }
            }
            // And an unknown route is a GoTrue-shaped 404.
            let unknown = try await auth.call(.get, "/nowhere")
            #expect(unknown.status == 404)
            #expect(unknown.headers["x-sb-error-code"] == "not_found")
        }
    }

    @Test func aTimestampParsesWithAndWithoutFractionalSeconds() {
        #expect(ClientTimestamp.parse("2025-07-11T18:18:45.537123Z") != nil)
        #expect(ClientTimestamp.parse("2025-07-11T18:18:45Z") != nil)
        #expect(ClientTimestamp.parse("2025-07-11T18:18:45.5Z")! > ClientTimestamp.parse("2025-07-11T18:18:45Z")!)
        let now = Date()
        let formatted = GoTrueTimestamp.format(now)
        #expect(abs(ClientTimestamp.parse(formatted)!.timeIntervalSince(now)) < 0.001)
    }
}

/// How a client parses User dates: RFC 3339 with or without fractional seconds (a bug that hit every
/// one of the apps when only one form was accepted).
enum ClientTimestamp {
    static func parse(_ text: String) -> Date? {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = fractional.date(from: text) {
            // ISO8601DateFormatter keeps milliseconds only; add the rest back.
            if let dot = text.firstIndex(of: "."), let end = text.firstIndex(of: "Z") {
                let digits = text[text.index(after: dot)..<end]
                if digits.count > 3, let extra = Double("0.000" + digits.dropFirst(3)) { return date.addingTimeInterval(extra) }
            }
            return date
        }
        let whole = ISO8601DateFormatter()
        whole.formatOptions = [.withInternetDateTime]
        return whole.date(from: text)
    }
}
