import AsyncHTTPClient
import Foundation
import NIOCore
import TestSupport
import Testing

/// A render's result as the photo editor sees it: the edit is made through the gateway process,
/// a worker renders it, and `render.edit.completed.v1` arrives on the owner's `me` channel —
/// through the outbox, the broker and the gateway's live feed — and on no one else's.
@Suite("Render events through the gateway") struct RenderEventsThroughGatewayTests {
    @Test func theOwnersMeChannelReceivesTheCompletedEditAndAnotherUsersDoesNot() async throws {
        try await RenderHarness.with { render in
            let gateway = try await ServiceProcess(
                "gateway",
                environment: [
                    "KAFKA_BROKERS": render.environment["KAFKA_BROKERS"]!,
                    "KAFKA_CREATE_TOPICS": "false",
                    "KAFKA_FETCH_MAX_WAIT": "10ms",
                    // Auth itself is not called here: the fake catalog publishes the test key set.
                    "GATEWAY_AUTH_URL": render.catalog.baseURL,
                    "GATEWAY_JWKS_URL": render.catalog.baseURL + "/jwks.json",
                    "GATEWAY_JWT_ISSUER": RenderHarness.issuer,
                    "GATEWAY_EDIT_RENDER_URL": render.app.baseURL,
                ]
            )
            defer { Task { await gateway.stop() } }
            let (owner, other) = (UUID(), UUID())
            let ownerSocket = RealtimeSocket(url: "ws://127.0.0.1:\(gateway.port)/v1/realtime?channels=me", token: try render.token(user: owner))
            let otherSocket = RealtimeSocket(url: "ws://127.0.0.1:\(gateway.port)/v1/realtime?channels=me", token: try render.token(user: other))
            defer {
                Task {
                    await ownerSocket.disconnect()
                    await otherSocket.disconnect()
                }
            }
            _ = try await ownerSocket.message { $0["op"] as? String == "subscribed" }
            _ = try await otherSocket.message { $0["op"] as? String == "subscribed" }

            var request = HTTPClientRequest(url: "\(gateway.baseURL)/v1/edits")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(try render.token(user: owner))")
            request.headers.add(name: "Idempotency-Key", value: UUID().uuidString)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(
                ByteBuffer(
                    string:
                        #"{"source":{"unsplashPhotoId":"FreshFlower"},"filters":[{"name":"sepia"},{"name":"vignette"}],"output":{"longestEdge":480}}"#
                )
            )
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            #expect(response.status.code == 202)
            let body = try await response.body.collect(upTo: 1 << 20)
            let created = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            let editId = try #require(created?["id"] as? String)

            let pushed = try await ownerSocket.message(within: .seconds(60)) {
                $0["type"] as? String == "render.edit.completed.v1"
                    && (($0["data"] as? [String: Any])?["editId"] as? String)?.lowercased() == editId.lowercased()
            }
            #expect(pushed["specversion"] as? String == "1.0")
            let data = try #require(pushed["data"] as? [String: Any])
            #expect((data["userId"] as? String)?.lowercased() == owner.uuidString.lowercased())
            #expect(data["width"] as? Int == 480)
            #expect((data["bytes"] as? Int ?? 0) > 0)
            // The edit the event announces is readable by its owner as completed.
            #expect(try await render.finished(editId, user: owner)["status"] as? String == "completed")
            // Another user's `me` channel saw nothing of it; a moment for a stray frame to arrive.
            try await Task.sleep(for: .milliseconds(500))
            #expect(!otherSocket.messages.contains { $0.contains(editId.lowercased()) || $0.contains(editId.uppercased()) })
            #expect(!otherSocket.messages.contains { $0.contains("render.edit") })
        }
    }
}
