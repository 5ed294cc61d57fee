import Foundation
import TestSupport
import Testing

@testable import Auth

@Suite("Refresh-token rotation and sign-out")
struct SessionTests {
    @Test func theSameTokenTwiceInsideTheIntervalGivesTheSameNewTokens() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            let first = try Session(try await auth.refresh(session.refreshToken))
            let again = try Session(try await auth.refresh(session.refreshToken))
            #expect(first.refreshToken != session.refreshToken)
            #expect(again.refreshToken == first.refreshToken)
            #expect(again.accessToken == first.accessToken)
            // The new token is the live one: it rotates in turn, and the first token presented
            // once more still leads to the newest pair.
            let second = try Session(try await auth.refresh(first.refreshToken))
            let replay = try Session(try await auth.refresh(session.refreshToken))
            #expect(replay.refreshToken == second.refreshToken)
            #expect(try await auth.call(.get, "/user", bearer: second.accessToken).status == 200)
        }
    }

    @Test func theActiveTokensParentGetsItBackAtAnyTimeAndAnOlderSpentTokenRevokesTheSession() async throws {
        try await AuthHarness.with(["AUTH_REFRESH_REUSE_INTERVAL": "0s"]) { auth in
            let session = try await auth.signUp()
            let rotated = try Session(try await auth.refresh(session.refreshToken))
            // The app never stored that answer (it went offline): long after the interval, its
            // token is the active one's parent, and gets the active token with a fresh access token.
            try await Task.sleep(for: .milliseconds(1_100))
            let recovered = try Session(try await auth.refresh(session.refreshToken))
            #expect(recovered.refreshToken == rotated.refreshToken)
            #expect(recovered.accessToken != rotated.accessToken)
            #expect(try await auth.call(.get, "/user", bearer: recovered.accessToken).status == 200)
            // Rotated once more, the first token is a grandparent: only a copy presents that.
            let newest = try Session(try await auth.refresh(rotated.refreshToken))
            let reused = try await auth.refresh(session.refreshToken)
            #expect(reused.status == 400)
            #expect(reused.headers["x-sb-error-code"] == "refresh_token_already_used")
            #expect(try reused.json()["msg"] as? String == "Invalid Refresh Token: Already Used")
            // Every token of the session stops working.
            let user = try await auth.call(.get, "/user", bearer: newest.accessToken)
            #expect(user.status == 403)
            #expect(user.headers["x-sb-error-code"] == "session_not_found")
            #expect(try await auth.refresh(newest.refreshToken).headers["x-sb-error-code"] == "refresh_token_not_found")
            #expect(try await auth.count("sessions") == 0)
        }
    }

    @Test func twoConcurrentRefreshesWithOneTokenBothSucceedWithTheSameResult() async throws {
        try await AuthHarness.with { auth in
            for _ in 0..<5 {
                let session = try await auth.signUp()
                async let a = auth.refresh(session.refreshToken)
                async let b = auth.refresh(session.refreshToken)
                let (first, second) = try await (Session(a), Session(b))
                #expect(first.refreshToken == second.refreshToken)
                #expect(first.accessToken == second.accessToken)
            }
        }
    }

    @Test func refreshTokensAreStoredOnlyAsTheirHash() async throws {
        try await AuthHarness.with { auth in
            let session = try await auth.signUp()
            let dump = try await auth.withDatabase { client in
                try await client.query("SELECT string_agg(t::text, ' ') FROM auth.refresh_tokens t").collect().first?.decode(String?.self) ?? nil
            }
            let stored = try #require(dump)
            #expect(!stored.contains(session.refreshToken))
            #expect(!stored.contains(Data(session.refreshToken.utf8).map { String(format: "%02x", $0) }.joined()))
        }
    }

    @Test func anIdleSessionExpires() async throws {
        try await AuthHarness.with(["AUTH_SESSION_INACTIVITY_TIMEOUT": "1m"]) { auth in
            let session = try await auth.signUp()
            try await auth.withDatabase { client in
                try await client.query("UPDATE auth.sessions SET refreshed_at = now() - interval '2 minutes'")
            }
            let response = try await auth.refresh(session.refreshToken)
            #expect(response.status == 403)
            #expect(response.headers["x-sb-error-code"] == "session_expired")
        }
    }

    /// Three sessions of one user (and one of another); returns whether each token still works.
    func logout(_ scope: String) async throws -> (mine: [Bool], other: Bool) {
        try await AuthHarness.with { auth in
            let first = try await auth.signUp()
            let second = try Session(try await auth.signIn(first.email))
            let third = try Session(try await auth.signIn(first.email))
            let stranger = try await auth.signUp()
            let response = try await auth.call(.post, "/logout?scope=\(scope)", bearer: second.accessToken)
            #expect(response.status == 204)
            var mine: [Bool] = []
            for session in [first, second, third] {
                mine.append(try await auth.call(.get, "/user", bearer: session.accessToken).status == 200)
            }
            return (mine, try await auth.call(.get, "/user", bearer: stranger.accessToken).status == 200)
        }
    }

    @Test func globalLogoutEndsEverySessionOfTheUser() async throws {
        let result = try await logout("global")
        #expect(result.mine == [false, false, false])
        #expect(result.other)
    }

    @Test func localLogoutEndsOnlyTheTokensSession() async throws {
        let result = try await logout("local")
        #expect(result.mine == [true, false, true])
        #expect(result.other)
    }

    @Test func othersLogoutKeepsOnlyTheTokensSession() async throws {
        let result = try await logout("others")
        #expect(result.mine == [false, true, false])
        #expect(result.other)
    }
}
