import Foundation
import LocalStack
import TestSupport
import Testing

/// notify in the stack the apps use: auth, tracking, notify and the gateway as processes, the
/// apps' calls through the gateway, tracking's own events, and the APNs stand-in as Apple.
@Suite("Pushes through the whole stack") struct ThroughTheGatewayTests {
    @Test func aCustomerAndARestaurantHearOfAnOrderOnTheirPhonesFromTrackingsOwnEvents() async throws {
        try await WholeStackTurns.take {
            let apns = try APNsStandIn()
            try await apns.start()
            let stack = try await ProcessStack.start(apns: apns)
            defer {
                Task {
                    await stack.stop()
                    await apns.stop()
                }
            }
            let api = GatewayAPI(base: stack.gateway.baseURL)
            let admin = try await api.account("admin", role: "admin")
            let owner = try await api.account("kitchen", role: "restaurant")
            let customer = try await api.account("customer", role: "customer")
            let customerPhone = String(repeating: "c1", count: 32)
            let kitchenTablet = String(repeating: "0a", count: 32)
            for (account, token) in [(customer, customerPhone), (owner, kitchenTablet)] {
                let device = try await api.expect(
                    200,
                    .PUT,
                    "/v1/devices/\(token.uppercased())",
                    token: account.token,
                    json: ["platform": "ios", "topic": "fi.splash.TrackBite", "environment": "sandbox"]
                )
                #expect(device["token"] as? String == token)
            }
            let restaurant = try await api.expect(
                201,
                .POST,
                "/v1/restaurants",
                token: admin.token,
                json: [
                    "ownerId": owner.id, "name": "Pizzeria Luna", "cuisine": "pizza", "address": "Kaivokatu 1",
                    "location": ["lat": 60.1710, "lng": 24.9414], "isOpen": true,
                    "menu": [["id": "m1", "name": "Margherita", "priceCents": 1290, "available": true]],
                ]
            )
            // Ordered at once: the restaurant's announcement (tracking.restaurants) may reach notify
            // after the order's events, which carry its name themselves.
            let placed = try await api.expect(
                201,
                .POST,
                "/v1/orders",
                token: customer.token,
                json: [
                    "restaurantId": restaurant["id"] as? String ?? "", "items": [["menuItemId": "m1", "quantity": 2]],
                    "dropoff": ["address": "Mannerheimintie 22", "lat": 60.1727, "lng": 24.9335],
                ],
                headers: [("Idempotency-Key", UUID().uuidString)]
            )
            let order = try #require(placed["id"] as? String)
            _ = try await api.expect(
                200,
                .POST,
                "/v1/orders/\(order)/transitions",
                token: owner.token,
                json: ["to": "accepted"],
                headers: [("If-Match", "\"1\"")]
            )
            try await eventually("both pushes reach APNs", timeout: .seconds(30)) {
                Set(apns.received.map(\.deviceToken)).isSuperset(of: [customerPhone, kitchenTablet])
            }
            let toKitchen = try #require(apns.received.first { $0.deviceToken == kitchenTablet })
            #expect(toKitchen.body.contains("New order #\(order.prefix(8)): 2 items"), "\(toKitchen.body)")
            let toCustomer = try #require(apns.received.first { $0.deviceToken == customerPhone })
            #expect(toCustomer.body.contains("Pizzeria Luna accepted your order"), "\(toCustomer.body)")
            #expect(toCustomer.headers["apns-collapse-id"] == "order-\(order)")
            #expect(toCustomer.status == 200)
            // Nobody is told of what they did: the customer placed the order, the kitchen accepted it.
            #expect(apns.received.filter { $0.deviceToken == customerPhone }.count == 1)
            #expect(apns.received.filter { $0.deviceToken == kitchenTablet }.count == 1)
            await stack.stop()
        }
    }
}
