import Contracts
import Foundation
import Testing

@testable import Notify

@Suite("Who is told what") struct NotificationPlannerTests {
    let parties = OrderParties(customerId: UUID(), restaurantId: UUID(), restaurantOwnerId: UUID(), driverId: UUID())
    let order = UUID()

    @Test func anAssignedDriverIsOfferedTheDeliveryAndTheCustomerTold() {
        let assigned = DriverAssigned(orderId: order, parties: parties, etaSeconds: 600, assignedAt: Date())
        let told = NotificationPlanner.notifications(for: assigned, facts: .init(restaurantName: "Luna", itemCount: 3))
        #expect(told.map(\.recipient) == [parties.driverId, parties.customerId])
        #expect(told[0].body == "New delivery: 3 items from Luna")
        #expect(told[0].collapseID == "offer-\(order.uuidString.lowercased())")
        #expect(told[1].collapseID == "order-\(order.uuidString.lowercased())")
    }

    @Test func nobodyIsToldOfWhatTheyDidThemselvesNorOfTheKitchensInnerSteps() {
        let byCustomer = OrderStatusChanged(
            orderId: order,
            parties: parties,
            status: .cancelled,
            previousStatus: .placed,
            by: OrderActor(userId: parties.customerId, role: .customer),
            reason: nil,
            version: 2,
            changedAt: Date()
        )
        #expect(NotificationPlanner.notifications(for: byCustomer, facts: .init()).isEmpty)
        for quiet in [OrderStatus.preparing, .readyForPickup, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff] {
            #expect(!Message.tellsCustomer(quiet))
            let moved = OrderStatusChanged(
                orderId: order,
                parties: parties,
                status: quiet,
                previousStatus: .placed,
                by: OrderActor(userId: parties.restaurantOwnerId, role: .restaurant),
                reason: nil,
                version: 2,
                changedAt: Date()
            )
            #expect(NotificationPlanner.notifications(for: moved, facts: .init()).isEmpty)
        }
        #expect(Message.order(.accepted, restaurant: "Luna").words(in: .en).body == "Luna accepted your order")
    }

    @Test func anEditsOwnerHearsItIsReadyOrFailed() throws {
        let owner = UUID()
        let edit = UUID()
        let failed = EditFailed(editId: edit, userId: owner, reason: "too large", failedAt: Date())
        let told = NotificationPlanner.notifications(for: failed, facts: .init())
        #expect(told.count == 1)
        #expect(told[0].recipient == owner && told[0].setting == .edits)
        #expect(told[0].body == "Your edit could not be rendered")
        let json = try told[0].payload().json()
        #expect(json.contains(#""thread-id":"edit-\#(edit.uuidString.lowercased())""#))
        #expect(json.utf8.count < 4_096)
    }
}

extension NotificationPlannerTests {
    @Test func anArrivingDriverIsAnnouncedToTheCustomerInMinutes() {
        let arriving = OrderArriving(orderId: order, parties: parties, etaSeconds: 170, arrivingAt: Date())
        let told = NotificationPlanner.notifications(for: arriving, facts: .init())
        #expect(told.map(\.recipient) == [parties.customerId])
        #expect(told.first?.body == "Your driver is about 3 minutes away")
        #expect(told.first?.collapseID == "order-\(order.uuidString.lowercased())")
        let close = OrderArriving(orderId: order, parties: parties, etaSeconds: 20, arrivingAt: Date())
        #expect(NotificationPlanner.notifications(for: close, facts: .init()).first?.body == "Your driver is about a minute away")
    }
}

extension NotificationPlannerTests {
    /// Every message has words in every language, and each language words a missing restaurant
    /// name and plural counts its own way.
    @Test func everyMessageIsWordedInEveryLanguage() {
        let messages: [Message] =
            [
                .newOrder(shortID: "1a2b3c4d", items: 1), .newOrder(shortID: "1a2b3c4d", items: 3),
                .offer(restaurant: "Luna", items: 2), .offer(restaurant: nil, items: nil),
                .driverOnTheWay(restaurant: "Luna"), .driverOnTheWay(restaurant: nil),
                .arriving(minutes: 1), .arriving(minutes: 3), .editReady, .editFailed,
                .likes(liker: "aino", others: 0), .likes(liker: nil, others: 1), .likes(liker: "eero", others: 4),
            ] + [OrderStatus.accepted, .rejected, .pickedUp, .delivered, .cancelled].map { .order($0, restaurant: nil) }
        for language in Language.allCases {
            let bodies = messages.map { $0.words(in: language).body }
            #expect(bodies.allSatisfy { !$0.isEmpty }, "\(language)")
            #expect(Set(bodies).count == bodies.count, "each message says something different in \(language)")
        }
        #expect(Message.newOrder(shortID: "1a2b3c4d", items: 1).words(in: .fi).body == "Uusi tilaus #1a2b3c4d: 1 tuote")
        #expect(Message.offer(restaurant: "Luna", items: 3).words(in: .fi).body == "Uusi toimitus: 3 tuotetta ravintolasta Luna")
        #expect(Message.offer(restaurant: nil, items: nil).words(in: .en).body == "New delivery: an order from the restaurant")
        #expect(Message.arriving(minutes: 3).words(in: .sv).body == "Din förare är ungefär 3 minuter bort")
        #expect(Message.likes(liker: "eero", others: 4).words(in: .fi).body == "eero ja 4 muuta tykkäsivät julkaisustasi")
        #expect(Message.likes(liker: nil, others: 0).words(in: .sv).body == "Någon gillade ditt inlägg")
    }
}
