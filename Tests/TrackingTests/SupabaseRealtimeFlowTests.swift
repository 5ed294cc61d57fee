import Foundation
import Identity
import LocalStack
import TestSupport
import Testing

extension TrackingAsProcesses {
    /// supabase-py's realtime client, unchanged, against a real stack: auth, tracking and the
    /// gateway as processes, a real Postgres and the test Kafka cluster. The changes it receives
    /// are made from the events tracking and auth publish.
    @Suite("Supabase Realtime through the gateway") struct SupabaseRealtimeFlowTests {

        @Test func supabasePyFollowsAnOrderARenameAndABroadcast() async throws {
            try await WholeStackTurns.take {
                let stack = try await ProcessStack.start()
                let gateway = stack.gateway
                defer { Task { await stack.stop() } }
                let api = GatewayAPI(base: gateway.baseURL)
                let admin = try await api.account("admin", role: "admin")
                let kitchen = try await api.account("kitchen", role: "restaurant")
                let customer = try await api.account("customer", role: "customer")
                let stranger = try await api.account("stranger", role: "customer")
                let restaurant =
                    try await api.expect(
                        201,
                        .POST,
                        "/v1/restaurants",
                        token: admin.token,
                        json: [
                            "ownerId": kitchen.id, "name": "Kallio Pizza", "location": ["lat": 60.1841, "lng": 24.9497],
                            "menu": [["id": "m1", "name": "Margherita", "priceCents": 1_290]],
                        ]
                    )["id"] as! String
                let order =
                    try await api.expect(
                        201,
                        .POST,
                        "/v1/orders",
                        token: customer.token,
                        json: [
                            "restaurantId": restaurant, "items": [["menuItemId": "m1", "quantity": 2]],
                            "dropoff": ["address": "Senate Square", "lat": 60.1694, "lng": 24.9526],
                        ],
                        headers: [("Idempotency-Key", UUID().uuidString)]
                    )["id"] as! String

                let script = try #require(Bundle.module.url(forResource: "supabase_realtime_flow", withExtension: "py", subdirectory: "Fixtures"))
                let newName = "renamed_\(UUID().uuidString.prefix(6).lowercased())"
                let output = try await ProcessCommand(
                    URL(fileURLWithPath: "/usr/bin/env"),
                    [
                        "python3", script.path, gateway.baseURL, "anon-key", customer.token, stranger.token, kitchen.token, order, customer.id,
                        newName,
                    ]
                ).runToCompletion()
                #expect(output.contains("all steps passed"), "\(output)")
                await stack.stop()
            }
        }
    }
}
