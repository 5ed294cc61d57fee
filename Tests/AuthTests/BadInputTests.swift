import AsyncHTTPClient
import Foundation
import TestSupport
import Testing

@Suite("Bad input gets a documented 4xx and stores nothing")
struct BadInputTests {
    func raw(_ auth: AuthHarness, _ path: String, _ body: Data, contentType: String = "application/json") async throws -> TestResponse {
        try await auth.app.request(.post, "/auth/v1" + path, headers: [("Content-Type", contentType)], body: .bytes(body))
    }

    func expectGoTrueError(_ response: TestResponse, status: ClosedRange<Int> = 400...499, _ sourceLocation: SourceLocation = #_sourceLocation) throws
    {
        #expect(status.contains(response.status), "\(response.status) \(response.text)", sourceLocation: sourceLocation)
        let body = try response.json()
        #expect(
            body["error_code"] is String && body["msg"] is String && body["code"] as? Int == response.status,
            "\(body)",
            sourceLocation: sourceLocation
        )
        #expect(response.headers["x-sb-error-code"] != nil, sourceLocation: sourceLocation)
    }

    @Test func badBodiesAreRefusedAndNothingIsStored() async throws {
        try await AuthHarness.with { auth in
            let existing = try await auth.signUp()
            let before = try await auth.count("users")
            let longEmail = String(repeating: "a", count: 290) + "@example.com"
            let cases: [(String, Data)] = [
                ("/signup", Data("{\"email\": \"a@b.c\", \"password\":".utf8)),
                ("/signup", Data("not json at all".utf8)),
                ("/signup", Data()),
                ("/signup", Data("[]".utf8)),
                ("/signup", Data(#"{"password": "correct horse 1"}"#.utf8)),
                ("/signup", Data(#"{"email": 42, "password": "correct horse 1"}"#.utf8)),
                ("/signup", Data([0x7B, 0x22, 0x65, 0x6D, 0x61, 0x69, 0x6C, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D])),
                ("/signup", try JSONSerialization.data(withJSONObject: ["email": longEmail, "password": "correct horse 1"])),
                (
                    "/signup",
                    try JSONSerialization.data(withJSONObject: ["email": "x'); DROP TABLE auth.users; --@example.com", "password": "correct horse 1"])
                ),
                (
                    "/signup",
                    try JSONSerialization.data(withJSONObject: [
                        "email": AuthHarness.uniqueEmail(), "password": "correct horse 1", "data": ["username": "'; DELETE FROM users; --"],
                    ])
                ),
                (
                    "/signup",
                    try JSONSerialization.data(withJSONObject: [
                        "email": AuthHarness.uniqueEmail(), "password": "correct horse 1", "data": ["blob": String(repeating: "x", count: 20_000)],
                    ])
                ),
                ("/token?grant_type=password", try JSONSerialization.data(withJSONObject: ["email": longEmail, "password": "x"])),
                ("/token?grant_type=password", Data("{".utf8)),
                ("/token?grant_type=refresh_token", Data(#"{"refresh_token": ["a"]}"#.utf8)),
            ]
            for (path, body) in cases {
                try expectGoTrueError(try await raw(auth, path, body))
            }
            // A SQL-looking password and email are just strings: the existing account still works.
            let sqlish = try await auth.signIn("' OR '1'='1", password: "' OR '1'='1")
            try expectGoTrueError(sqlish)
            #expect(try await auth.signIn(existing.email).status == 200)
            #expect(try await auth.count("users") == before)
        }
    }

    @Test func aTenMegabyteBodyIsRefusedWithoutBeingRead() async throws {
        try await AuthHarness.with { auth in
            let big = Data(repeating: UInt8(ascii: "a"), count: 10 << 20)
            let response = try await raw(auth, "/signup", big)
            try expectGoTrueError(response, status: 413...413)
            #expect(response.headers["x-sb-error-code"] == "request_too_large")
            #expect(try await auth.count("users") == 0)
        }
    }

    @Test func theAuthorizationHeaderOfAnAPIKeyNeverBreaksSignUpOrSignIn() async throws {
        try await AuthHarness.with { auth in
            let email = AuthHarness.uniqueEmail()
            let signUp = try await auth.call(
                .post,
                "/signup",
                json: ["email": email, "password": "correct horse 1"],
                bearer: "eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoiYW5vbiJ9.c2lnbmF0dXJl"
            )
            #expect(signUp.status == 200)
            let signIn = try await auth.call(
                .post,
                "/token?grant_type=password",
                json: ["email": email, "password": "correct horse 1"],
                bearer: "garbage"
            )
            #expect(signIn.status == 200)
        }
    }
}
