import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@testable import Notify

/// From events on Kafka to requests at the APNs stand-in: who is told, with what headers, and
/// what happens when Apple refuses, fails or the event is old.
@Suite("Deliveries to APNs") struct DeliveryTests {
    struct Order {
        let id = UUID()
        let customer = UUID()
        let owner = UUID()
        let restaurant = UUID()
        let driver = UUID()

        var parties: OrderParties { OrderParties(customerId: customer, restaurantId: restaurant, restaurantOwnerId: owner, driverId: nil) }

        /// Placed, carrying its restaurant's name as tracking's events do.
        func placed() -> OrderPlaced {
            var placed = OrderPlaced(
                orderId: id,
                parties: parties,
                items: [OrderItem(menuItemId: "m1", name: "Margherita", quantity: 2, unitPriceCents: 1290)],
                totalCents: 2580,
                dropoff: Dropoff(address: "Kaivokatu 1", lat: 60.171, lng: 24.941),
                etaSeconds: 900,
                placedAt: Date()
            )
            placed.restaurantName = "Pizzeria Luna"
            return placed
        }

        /// A move, carrying the restaurant's name and item count as tracking's events do.
        func moved(to status: OrderStatus, from previous: OrderStatus, by actor: OrderActor) -> OrderStatusChanged {
            var moved = OrderStatusChanged(
                orderId: id,
                parties: parties,
                status: status,
                previousStatus: previous,
                by: actor,
                reason: nil,
                version: 2,
                changedAt: Date()
            )
            moved.restaurantName = "Pizzeria Luna"
            moved.itemCount = 2
            return moved
        }

        func restaurantNamed(_ name: String) -> RestaurantChanged {
            RestaurantChanged(
                restaurantId: restaurant,
                ownerId: owner,
                change: .created,
                name: name,
                cuisine: "pizza",
                isOpen: true,
                version: 1,
                changedAt: Date()
            )
        }
    }

    static func envelope(_ event: some DomainEvent, time: Date = Date(), id: UUID = UUID()) throws -> (envelope: EventEnvelope, topic: String) {
        (try EventEnvelope(event, source: "/splash/tracking", id: id, time: time), type(of: event).topic.name)
    }

    @Test func anAcceptedOrderReachesTheCustomersPhoneOnceWithEveryHeaderApnsReads() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let order = Order()
            let phone = try await notify.registerDevice(for: order.customer)
            let ownersPhone = try await notify.registerDevice(for: order.owner, environment: "sandbox")
            let accepted = try Self.envelope(order.moved(to: .accepted, from: .placed, by: OrderActor(userId: order.owner, role: .restaurant)))
            try await TestKafka.shared.publish([try Self.envelope(order.placed()), accepted])
            // Kafka delivers the acceptance again: still one notification.
            try await TestKafka.shared.publish([accepted])
            try await eventually("the customer's and the owner's notifications arrive") { apns.received.count >= 2 }
            try await Task.sleep(for: .milliseconds(500))
            let received = apns.received
            #expect(received.count == 2)
            let toCustomer = try #require(received.first { $0.deviceToken == phone })
            #expect(toCustomer.status == 200)
            #expect(toCustomer.headers["apns-topic"] == "fi.splash.TrackBite")
            #expect(toCustomer.headers["apns-push-type"] == "alert")
            #expect(toCustomer.headers["apns-priority"] == "10")
            #expect(toCustomer.headers["apns-collapse-id"] == "order-\(order.id.uuidString.lowercased())")
            #expect(toCustomer.headers["apns-expiration"] == String(Int(accepted.envelope.time.timeIntervalSince1970) + 3_600))
            #expect(toCustomer.body.contains("Pizzeria Luna accepted your order"), "\(toCustomer.body)")
            #expect(toCustomer.body.contains(#""splash":{"id":"\#(order.id.uuidString.lowercased())","type":"order"}"#), "\(toCustomer.body)")
            // The owner hears of the new order (not of the acceptance, which they made).
            let toOwner = try #require(received.first { $0.deviceToken == ownersPhone })
            #expect(toOwner.body.contains("2 items"))
            #expect(toOwner.headers["apns-collapse-id"] == nil)
            // One HTTP/2 connection carried both.
            #expect(apns.connections == 1)
            try await eventually("the log says delivered") { try await notify.deliveries().allSatisfy { $0.status == "delivered" } }
        }
    }

    @Test func aRevokedDeviceIsForgottenAndAFailingApnsIsRetriedUnderTheSameId() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let order = Order()
            let revoked = try await notify.registerDevice(for: order.customer)
            let flaky = try await notify.registerDevice(for: order.customer)
            apns.answer(.init(status: 410, reason: "Unregistered", timestamp: Date()), forDevice: revoked)
            apns.script([.init(status: 429, reason: "TooManyRequests"), .init(status: 503, reason: "ServiceUnavailable")])
            try await TestKafka.shared.publish([
                try Self.envelope(order.moved(to: .pickedUp, from: .arrivedAtPickup, by: OrderActor(userId: nil, role: .dispatch)))
            ])
            try await eventually("the flaky device's notification gets through") {
                apns.received.contains { $0.deviceToken == flaky && $0.status == 200 }
            }
            let tries = apns.received.filter { $0.deviceToken == flaky }
            #expect(tries.count == 3 || tries.count == 2, "two refusals went to it, or one each")
            #expect(Set(tries.compactMap { $0.headers["apns-id"] }).count == 1)
            try await eventually("the revoked device is gone") {
                (try await notify.call(.get, "/v1/devices", as: order.customer).json()["devices"] as? [[String: Any]])?.count == 1
            }
            let log = try await notify.deliveries()
            #expect(log.first { $0.device == revoked }?.status == "rejected")
            #expect(log.first { $0.device == flaky }?.status == "delivered")
        }
    }

    @Test func anOldEventIsLoggedExpiredAndNothingGoesToSomeoneWhoseSettingIsOff() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let late = Order()
            let quiet = Order()
            try await notify.registerDevice(for: late.customer)
            try await notify.registerDevice(for: quiet.customer)
            #expect(try await notify.call(.patch, "/v1/notification-settings", as: quiet.customer, json: #"{"orders":false}"#).status == 200)
            let dispatch = OrderActor(userId: nil, role: .dispatch)
            try await TestKafka.shared.publish([
                try Self.envelope(late.moved(to: .delivered, from: .arrivedAtDropoff, by: dispatch), time: Date().addingTimeInterval(-11 * 60)),
                try Self.envelope(quiet.moved(to: .delivered, from: .arrivedAtDropoff, by: dispatch)),
            ])
            try await eventually("the late one is logged") { try await notify.deliveries().count == 1 }
            try await Task.sleep(for: .seconds(1))
            #expect(try await notify.deliveries().map(\.status) == ["expired"])
            #expect(apns.received.isEmpty)
        }
    }

    @Test func anExpiredProviderTokenIsRenewedAndTheNotificationSentAgain() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let order = Order()
            let phone = try await notify.registerDevice(for: order.customer)
            apns.script([.init(status: 403, reason: "ExpiredProviderToken")])
            try await TestKafka.shared.publish([
                try Self.envelope(order.moved(to: .cancelled, from: .placed, by: OrderActor(userId: nil, role: .admin)))
            ])
            try await eventually("it gets through") { apns.received.contains { $0.deviceToken == phone && $0.status == 200 } }
            let tries = apns.received
            #expect(tries.count == 2)
            #expect(tries[0].headers["authorization"] != tries[1].headers["authorization"])
            #expect(tries[0].headers["apns-id"] == tries[1].headers["apns-id"])
        }
    }

    @Test func withoutAnApnsKeyNotificationsGoToTheSinkWordedFromTheEventAlone() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let order = Order()
            try await notify.registerDevice(for: order.customer)
            // The restaurant was never announced: the event's own restaurant name words the push.
            var accepted = order.moved(to: .accepted, from: .placed, by: OrderActor(userId: order.owner, role: .restaurant))
            accepted.restaurantName = "Kebab Kulma"
            try await TestKafka.shared.publish([try Self.envelope(accepted)])
            try await eventually("the sink has it") { try await notify.deliveries().map(\.status) == ["delivered"] }
            let log = try await notify.call(.get, "/v1/admin/notifications", as: UUID(), role: "admin").json()
            let payload = (log["items"] as? [[String: Any]])?.first?["payload"] as? [String: Any]
            let alert = (payload?["aps"] as? [String: Any])?["alert"] as? [String: Any]
            #expect(alert?["body"] as? String == "Kebab Kulma accepted your order")
        }
    }
}

extension DeliveryTests {
    /// Each of a person's phones reads the push in its own locale's language: Finnish and Swedish
    /// (Helsinki's two), English for a locale notify has no words for.
    @Test func eachPhoneReadsThePushInItsLocalesLanguage() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let order = Order()
            let finnish = try await notify.registerDevice(for: order.customer, locale: "fi-FI")
            let swedish = try await notify.registerDevice(for: order.customer, locale: "sv_FI")
            let german = try await notify.registerDevice(for: order.customer, locale: "de-DE")
            try await TestKafka.shared.publish([
                try Self.envelope(order.moved(to: .accepted, from: .placed, by: OrderActor(userId: order.owner, role: .restaurant)))
            ])
            try await eventually("all three phones are told") { Set(apns.received.map(\.deviceToken)).count == 3 }
            func alert(_ device: String) throws -> [String: Any]? {
                let body = try #require(apns.received.first { $0.deviceToken == device }?.body)
                let payload = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
                return (payload?["aps"] as? [String: Any])?["alert"] as? [String: Any]
            }
            #expect(try alert(finnish)?["title"] as? String == "Tilauksesi")
            #expect(try alert(finnish)?["body"] as? String == "Pizzeria Luna hyväksyi tilauksesi")
            #expect(try alert(swedish)?["body"] as? String == "Pizzeria Luna har tagit emot din beställning")
            #expect(try alert(german)?["body"] as? String == "Pizzeria Luna accepted your order")
            // One notification, three devices: three apns-ids, one per device.
            #expect(Set(apns.received.compactMap { $0.headers["apns-id"] }).count == 3)
        }
    }

    /// A slow APNs whose connection is cut while the request is in flight: the notification goes
    /// again on a new connection, under the same apns-id, and is delivered.
    @Test func aConnectionCutMidStreamIsOpenedAgainAndTheStreamRetriedUnderItsId() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let order = Order()
            let phone = try await notify.registerDevice(for: order.customer)
            apns.delayAnswers(by: .seconds(3))
            try await TestKafka.shared.publish([
                try Self.envelope(order.moved(to: .pickedUp, from: .arrivedAtPickup, by: OrderActor(userId: nil, role: .dispatch)))
            ])
            try await eventually("the request is in flight") { apns.received.contains { $0.deviceToken == phone } }
            await apns.stop()
            apns.delayAnswers(by: .zero)
            try await apns.start()
            try await eventually("it is delivered after the cut", timeout: .seconds(30)) {
                try await notify.deliveries().first?.status == "delivered"
            }
            let tries = apns.received.filter { $0.deviceToken == phone }
            #expect(tries.count >= 2, "the request reached APNs again")
            #expect(Set(tries.compactMap { $0.headers["apns-id"] }).count == 1)
            #expect(Set(tries.map(\.connection)).count >= 2, "on a new connection")
        }
    }
}
