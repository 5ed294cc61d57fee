import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@testable import Notify

/// The receipt a customer gets by mail when an order is delivered.
@Suite("Receipts by mail") struct ReceiptTests {
    typealias Order = DeliveryTests.Order

    @Test func aReceiptListsItemsPricesAndTotalAndItsHTMLTakesNoMarkupFromAMenu() {
        let receipt = Receipt(
            order: UUID(),
            customer: UUID(),
            restaurant: "Luna & Sons",
            items: [
                OrderItem(menuItemId: "m1", name: "Margherita", quantity: 2, unitPriceCents: 1290),
                OrderItem(menuItemId: "m2", name: "<script>alert(1)</script>", quantity: 1, unitPriceCents: 650),
            ],
            totalCents: 3230,
            placedAt: Date(timeIntervalSince1970: 1_800_000_000),
            deliveredAt: Date(timeIntervalSince1970: 1_800_002_100)
        )
        let mail = receipt.mail(id: UUID())
        #expect(mail.subject == "Your receipt from Luna & Sons")
        #expect(mail.text.contains("2 × Margherita  25.80 €"))
        #expect(mail.text.contains("Total  32.30 €"))
        #expect(mail.text.contains("Delivered: 2027-01-15 08:35 UTC"))
        #expect(mail.html.contains("&lt;script&gt;") && !mail.html.contains("<script>"))
        #expect(mail.html.contains("Luna &amp; Sons"))
        #expect(mail.recipient == .user(receipt.customer))
    }

    /// The order's placing and delivery, carrying the restaurant's name as tracking's events do.
    static func deliveredOrder(_ order: Order, to notify: NotifyHarness) async throws -> [(envelope: EventEnvelope, topic: String)] {
        let dispatch = OrderActor(userId: nil, role: .dispatch)
        return [
            try DeliveryTests.envelope(order.placed()),
            try DeliveryTests.envelope(order.moved(to: .delivered, from: .arrivedAtDropoff, by: dispatch)),
        ]
    }

    @Test func aDeliveredOrderMailsItsReceiptOverSMTPToTheAddressAuthHas() async throws {
        let smtp = try await SMTPTestServer()
        defer { smtp.stop() }
        try await NotifyHarness.with(apns: false, smtp: smtp) { notify in
            let order = Order()
            notify.directory.set(order.customer, "aino@example.com")
            let events = try await Self.deliveredOrder(order, to: notify)
            // The order's placing is known before its delivery (the same partition, in order).
            try await TestKafka.shared.publish(events)
            try await TestKafka.shared.publish([events[1]])  // delivered again by Kafka: one mail
            try await eventually("the receipt arrives") { smtp.received.contains { $0.to == ["aino@example.com"] } }
            try await Task.sleep(for: .seconds(1))
            let mails = smtp.received.filter { $0.to == ["aino@example.com"] }
            #expect(mails.count == 1)
            let mail = try #require(mails.first)
            #expect(mail.subject == "Your receipt from Pizzeria Luna")
            #expect(mail.from == "receipts@splash.example")
            #expect(mail.tls, "STARTTLS is used when the server offers it")
            #expect(mail.parts["text/plain"]?.contains("2 × Margherita  25.80 €") == true, "\(mail.parts)")
            // Marked sent, its body cleared, once the server's answer is in (a moment after the mail).
            try await eventually("the receipt marked sent") {
                try await notify.database.count("notify.mail_outbox", where: "status = 'sent' AND text_body IS NULL") == 1
            }
        }
    }

    @Test func noReceiptForACustomerWhoTurnedThemOffAndTheCatcherShowsTheRestToAdminsOnly() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let quiet = Order()
            let keen = Order()
            notify.directory.set(quiet.customer, "quiet@example.com")
            notify.directory.set(keen.customer, "keen@example.com")
            let off = try await notify.call(.patch, "/v1/notification-settings", as: quiet.customer, json: #"{"email":{"receipts":false}}"#)
            #expect(off.status == 200)
            try await TestKafka.shared.publish(try await Self.deliveredOrder(quiet, to: notify) + Self.deliveredOrder(keen, to: notify))
            let admin = UUID()
            try await eventually("the keen customer's receipt is caught") {
                let caught = try await notify.call(.get, "/v1/admin/mail?to=keen@example.com", as: admin, role: "admin").json()
                return (caught["items"] as? [Any])?.count == 1
            }
            let caught = try await notify.call(.get, "/v1/admin/mail?to=keen@example.com", as: admin, role: "admin").json()
            let mail = try #require((caught["items"] as? [[String: Any]])?.first)
            #expect(mail["subject"] as? String == "Your receipt from Pizzeria Luna")
            #expect((mail["text"] as? String)?.contains("Total  25.80 €") == true)
            #expect(
                (try await notify.call(.get, "/v1/admin/mail?to=quiet@example.com", as: admin, role: "admin").json()["items"] as? [Any])?.isEmpty
                    == true
            )
            #expect(try await notify.call(.get, "/v1/admin/mail", as: keen.customer).status == 403)
            #expect(try await notify.call(.get, "/v1/admin/notifications", as: keen.customer).status == 403)
            #expect(try await notify.call(.get, "/v1/admin/notifications?limit=0", as: admin, role: "admin").status == 422)
        }
    }
}
