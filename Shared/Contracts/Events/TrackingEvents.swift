import Foundation

/// Where an order is in its life.
public enum OrderStatus: String, Codable, Sendable, CaseIterable {
    case placed, accepted, preparing, ready, pickedUp = "picked_up", delivered, cancelled
}

/// The parties of an order: who may see its events (its customer, its restaurant, its driver and
/// admins).
public struct OrderParties: Codable, Sendable, Equatable {
    public var customerId: UUID
    public var restaurantId: UUID
    public var driverId: UUID?

    public init(customerId: UUID, restaurantId: UUID, driverId: UUID?) {
        self.customerId = customerId
        self.restaurantId = restaurantId
        self.driverId = driverId
    }
}

extension OrderParties {
    /// The users of the order: its customer, its restaurant and, once assigned, its driver.
    public var people: [UUID] {
        [customerId, restaurantId] + (driverId.map { [$0] } ?? [])
    }
}

/// `tracking.order.placed.v1`.
public struct OrderPlaced: DomainEvent {
    public struct Item: Codable, Sendable, Equatable {
        public var name: String
        public var quantity: Int

        public init(name: String, quantity: Int) {
            self.name = name
            self.quantity = quantity
        }
    }

    public static let type = "tracking.order.placed.v1"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderParties
    public var items: [Item]
    public var totalCents: Int
    public var placedAt: Date

    public init(orderId: UUID, parties: OrderParties, items: [Item], totalCents: Int, placedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.items = items
        self.totalCents = totalCents
        self.placedAt = placedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.order.status-changed.v1`.
public struct OrderStatusChanged: DomainEvent {
    public static let type = "tracking.order.status-changed.v1"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderParties
    public var status: OrderStatus
    public var previousStatus: OrderStatus
    public var changedAt: Date

    public init(orderId: UUID, parties: OrderParties, status: OrderStatus, previousStatus: OrderStatus, changedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.status = status
        self.previousStatus = previousStatus
        self.changedAt = changedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.order.driver-assigned.v1`.
public struct DriverAssigned: DomainEvent {
    public static let type = "tracking.order.driver-assigned.v1"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderParties
    public var assignedAt: Date

    public init(orderId: UUID, parties: OrderParties, assignedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.assignedAt = assignedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.driver.location-updated.v1`: a driver's position (WGS 84), with the order they
/// are delivering, if any.
public struct DriverLocationUpdated: DomainEvent {
    public static let type = "tracking.driver.location-updated.v1"
    public static let topic = TopicCatalog.trackingLocations
    public var driverId: UUID
    public var orderId: UUID?
    public var latitude: Double
    public var longitude: Double
    /// Degrees clockwise from north, if known.
    public var heading: Double?
    /// Metres per second, if known.
    public var speed: Double?
    public var recordedAt: Date

    public init(driverId: UUID, orderId: UUID?, latitude: Double, longitude: Double, heading: Double?, speed: Double?, recordedAt: Date) {
        self.driverId = driverId
        self.orderId = orderId
        self.latitude = latitude
        self.longitude = longitude
        self.heading = heading
        self.speed = speed
        self.recordedAt = recordedAt
    }

    public var aggregateID: String { driverId.uuidString.lowercased() }
}
