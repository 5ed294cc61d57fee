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
            #expect(NotificationPlanner.customerWords(quiet, restaurant: "Luna") == nil)
        }
        #expect(NotificationPlanner.customerWords(.accepted, restaurant: "Luna") == "Luna accepted your order")
    }

    @Test func anEditsOwnerHearsItIsReadyOrFailed() throws {
        let owner = UUID()
        let edit = UUID()
        let failed = EditFailed(editId: edit, userId: owner, reason: "too large", failedAt: Date())
        let told = NotificationPlanner.notifications(for: failed, facts: .init())
        #expect(told.count == 1)
        #expect(told[0].recipient == owner && told[0].setting == .edits)
        #expect(told[0].body == "Your edit could not be rendered")
        let json = try told[0].payload.json()
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
