import Foundation
import PostgresNIO
import TestSupport
import Testing

/// `AUTH_SECURE_PASSWORD_CHANGE` (accounts.md): a session older than a day changes the password
/// only with a nonce from `/reauthenticate`; a new session, and any session with the setting off
/// (GoTrue's default), needs none.
@Suite("Secure password change")
struct SecurePasswordChangeTests {
    /// Makes `user`'s sessions 25 hours old.
    func age(_ user: String, _ auth: AuthHarness) async throws {
        try await auth.database.withClient { client in
            try await client.query("UPDATE auth.sessions SET created_at = now() - interval '25 hours' WHERE user_id = \(UUID(uuidString: user)!)")
        }
    }

    @Test func aSessionOlderThanADayNeedsTheMailedNonce() async throws {
        try await AuthHarness.with(["AUTH_SECURE_PASSWORD_CHANGE": "true"]) { auth in
            let person = try await auth.signUp()
            // A new session changes it at once.
            #expect(try await auth.call(.put, "/user", json: ["password": "second password 2"], bearer: person.accessToken).status == 200)

            try await age(person.userID, auth)
            let bare = try await auth.call(.put, "/user", json: ["password": "third password 3"], bearer: person.accessToken)
            #expect(bare.status == 400 && bare.headers["x-sb-error-code"] == "reauthentication_needed", "\(bare.text)")
            // A weak password is refused as such, before any nonce is asked for or spent.
            let weak = try await auth.call(.put, "/user", json: ["password": "123", "nonce": "000000"], bearer: person.accessToken)
            #expect(weak.status == 422 && weak.headers["x-sb-error-code"] == "weak_password", "\(weak.text)")

            #expect(try await auth.call(.get, "/reauthenticate", bearer: person.accessToken).status == 200)
            let nonce = try #require(try await auth.mail(to: person.email, count: 1).last?.code)
            let wrong = try await auth.call(
                .put,
                "/user",
                json: ["password": "third password 3", "nonce": nonce == "000000" ? "111111" : "000000"],
                bearer: person.accessToken
            )
            #expect(wrong.status == 400 && wrong.headers["x-sb-error-code"] == "reauthentication_not_valid", "\(wrong.text)")
            #expect(try await auth.signIn(person.email, password: "second password 2").status == 200, "nothing changed")

            let proven = try await auth.call(.put, "/user", json: ["password": "third password 3", "nonce": nonce], bearer: person.accessToken)
            #expect(proven.status == 200, "\(proven.text)")
            #expect(try await auth.signIn(person.email, password: "third password 3").status == 200)
            // Good once.
            let again = try await auth.call(.put, "/user", json: ["password": "fourth password 4", "nonce": nonce], bearer: person.accessToken)
            #expect(again.status == 400 && again.headers["x-sb-error-code"] == "reauthentication_not_valid", "\(again.text)")
            // Other changes need no nonce.
            #expect(
                try await auth.call(
                    .put,
                    "/user",
                    json: ["data": ["username": "renamed_\(UUID().uuidString.prefix(6).lowercased())"]],
                    bearer: person.accessToken
                ).status == 200
            )
        }
    }

    @Test func offByDefaultAsInGoTrue() async throws {
        try await AuthHarness.with { auth in
            let person = try await auth.signUp()
            try await age(person.userID, auth)
            #expect(try await auth.call(.put, "/user", json: ["password": "second password 2"], bearer: person.accessToken).status == 200)
        }
    }
}
