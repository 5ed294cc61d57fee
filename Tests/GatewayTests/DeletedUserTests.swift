import Contracts
import Foundation
import TestSupport
import Testing

/// A deleted account (`auth.user.deleted.v1`) at the gateway: its still-valid access tokens are
/// refused within 2 s and its live connections closed; a gateway started afterwards reads the last
/// hour back before it is ready, and refuses them too.
@Suite("A deleted user at the gateway")
struct DeletedUserTests {
    @Test func aDeletedUsersTokensAreRefusedWithinTwoSecondsAndTheirSocketIsClosed() async throws {
        let (deleted, bystander) = (UUID(), UUID())
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let token = try gateway.token(user: deleted)
            let other = try gateway.token(user: bystander)
            #expect(try await gateway.get("/v1/edits", bearer: token).status == 200)
            let socket = RealtimeSocket(url: gateway.webSocketURL + "?channels=me", token: token)
            defer { Task { await socket.disconnect() } }
            _ = try await socket.message { $0["op"] as? String == "subscribed" }

            let published = ContinuousClock.now
            try await TestKafka.shared.publish([UserDeleted(userId: deleted, deletedAt: Date())], source: "/splash/auth")
            try await eventually("the token refused", timeout: .seconds(5)) {
                try await gateway.get("/v1/edits", bearer: token).status == 401
            }
            let refusedAfter = ContinuousClock.now - published
            #expect(refusedAfter < .seconds(2), "refused after \(refusedAfter)")
            let refusal = try await gateway.get("/v1/edits", bearer: token)
            #expect(refusal.headers["www-authenticate"]?.contains("invalid_token") == true)
            #expect(try refusal.json()["detail"] as? String == "The account this access token was issued to has been deleted.")
            #expect(try await socket.waitForClose().code == 4001)
            #expect(try await gateway.get("/v1/edits", bearer: other).status == 200)
            // A new socket with the token is refused too.
            let again = RealtimeSocket(url: gateway.webSocketURL + "?channels=me", token: token)
            #expect(try await again.waitForClose().code == 4001)
        }
        // A gateway started after the deletion knows it before it is ready.
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            #expect(try await gateway.get("/v1/edits", bearer: try gateway.token(user: deleted)).status == 401)
            #expect(try await gateway.get("/v1/edits", bearer: try gateway.token(user: bystander)).status == 200)
        }
    }

    /// On Supabase Realtime the socket stays (it may carry others' joins): the deleted user's
    /// joins end, each with a system error and `phx_close`, within a second of the gateway
    /// reading the deletion (the hub's watch runs once a second; half a second more for a loaded
    /// machine); a bystander's join on the same socket stays.
    @Test func aDeletedUsersSupabaseJoinsEndWithinASecondOfTheDeletionBeingRead() async throws {
        let (deleted, bystander) = (UUID(), UUID())
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let socket = RealtimeSocket(url: SupabaseRealtimeTests.url(gateway))
            defer { Task { await socket.disconnect() } }
            let profiles: [[String: Any]] = [["event": "*", "schema": "public", "table": "profiles"]]
            for (topic, ref, user) in [("realtime:gone", "1", deleted), ("realtime:stays", "2", bystander)] {
                try await socket.send(try SupabaseRealtimeTests.join(topic, ref: ref, token: try gateway.token(user: user), changes: profiles))
            }
            for ref in ["1", "2"] { _ = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == ref } }

            let token = try gateway.token(user: deleted)
            try await TestKafka.shared.publish([UserDeleted(userId: deleted, deletedAt: Date())], source: "/splash/auth")
            try await eventually("the deletion read", timeout: .seconds(5)) {
                try await gateway.get("/v1/edits", bearer: token).status == 401
            }
            let read = ContinuousClock.now
            let ended = try await socket.phoenix { $0["event"] as? String == "system" && SupabaseRealtimeTests.status($0) == "error" }
            let endedAfter = ContinuousClock.now - read
            #expect(endedAfter < .seconds(1.5), "ended \(endedAfter) after the deletion was read")
            #expect(ended["topic"] as? String == "realtime:gone")
            #expect(((ended["payload"] as? [String: Any])?["message"] as? String) == "The account has been deleted")
            _ = try await socket.phoenix { $0["event"] as? String == "phx_close" && $0["topic"] as? String == "realtime:gone" }
            try await Task.sleep(for: .seconds(1.5))
            #expect(!socket.phoenixMessages.contains { $0["topic"] as? String == "realtime:stays" && $0["event"] as? String == "phx_close" })
        }
    }

}
