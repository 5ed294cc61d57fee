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
}
