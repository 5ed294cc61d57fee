import Contracts

/// The order state machine and who may make each move (tracking's README, "Orders").
///
/// ```
/// placed → accepted → preparing → ready_for_pickup → driver_assigned → enroute_to_pickup →
/// arrived_at_pickup → picked_up → enroute_to_dropoff → arrived_at_dropoff → delivered
/// placed → rejected (restaurant)         any state before picked_up → cancelled
/// driver_assigned / enroute_to_pickup → ready_for_pickup (driver unassigns; admin reassigns)
/// ```
enum OrderMachine {
    /// Who a move is made by, as far as the rules go: the order's customer, its restaurant's
    /// owner, its assigned driver, an admin, or the dispatcher.
    enum Party: Sendable, Equatable {
        case customer, restaurant, driver, admin, dispatch
    }

    /// The states an order cannot leave.
    static let terminal: Set<OrderStatus> = [.delivered, .rejected, .cancelled]

    /// The states in which a driver is on the order.
    static let withDriver: Set<OrderStatus> = [.driverAssigned, .enrouteToPickup, .arrivedAtPickup, .pickedUp, .enrouteToDropoff, .arrivedAtDropoff]

    /// The driver's legs, in order.
    static let legs: [OrderStatus] = [
        .driverAssigned, .enrouteToPickup, .arrivedAtPickup, .pickedUp, .enrouteToDropoff, .arrivedAtDropoff, .delivered,
    ]

    /// States before the food is picked up.
    static let beforePickup: Set<OrderStatus> = [
        .placed, .accepted, .preparing, .readyForPickup, .driverAssigned, .enrouteToPickup, .arrivedAtPickup,
    ]

    /// Whether `party` may move an order from `from` to `to`.
    static func allows(_ party: Party, from: OrderStatus, to: OrderStatus) -> Bool {
        guard !terminal.contains(from) else { return false }
        switch to {
        case .cancelled:
            switch party {
            case .customer: return from == .placed || from == .accepted
            case .restaurant: return beforePickup.contains(from)
            case .admin: return true
            case .driver, .dispatch: return false
            }
        case .readyForPickup where from == .driverAssigned || from == .enrouteToPickup:
            // The driver gives the order back; an admin takes it from them to reassign it.
            return party == .driver || party == .admin
        default:
            break
        }
        let kitchen: [(OrderStatus, OrderStatus)] = [
            (.placed, .accepted), (.placed, .rejected), (.accepted, .preparing), (.preparing, .readyForPickup),
        ]
        if kitchen.contains(where: { $0 == (from, to) }) { return party == .restaurant || party == .admin }
        if from == .readyForPickup, to == .driverAssigned { return party == .dispatch || party == .admin }
        if let index = legs.firstIndex(of: from), index + 1 < legs.count, legs[index + 1] == to {
            return party == .driver || party == .admin
        }
        return false
    }
}
