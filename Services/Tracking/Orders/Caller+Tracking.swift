import Contracts
import KeySetClient

extension Caller {
    /// The caller as an order's history records who moved it.
    var actor: OrderActor {
        let acting: OrderActor.Role =
            switch role {
            case .customer: .customer
            case .restaurant: .restaurant
            case .driver: .driver
            case .admin: .admin
            }
        return OrderActor(userId: id, role: acting)
    }

    /// The settings tracking's row-level security reads.
    var settings: [(name: String, value: String)] {
        [("app.user_id", id.uuidString.lowercased()), ("app.role", role.rawValue)]
    }
}
