import Foundation

// tracking's events. The v2 types tell an order's whole story: every status of its state machine,
// who made each move, the restaurant's owner among its parties, and each position's ETA. The v1
// types stay as they were first published, for consumers written against them: an order's v1
// events come beside its v2 ones, a status change only when the move means something in v1's
// seven statuses (`OrderStatusV1(_:)`), so a v1 consumer never meets a value it does not know.
// Positions are v2 only: telemetry is not doubled on the hot path (asyncapi.yaml says so).

/// Where an order is in its life: the state machine of tracking's README.
public enum OrderStatus: String, Codable, Sendable, CaseIterable {
    case placed, accepted, rejected, preparing
    case readyForPickup = "ready_for_pickup"
    case driverAssigned = "driver_assigned"
    case enrouteToPickup = "enroute_to_pickup"
    case arrivedAtPickup = "arrived_at_pickup"
    case pickedUp = "picked_up"
    case enrouteToDropoff = "enroute_to_dropoff"
    case arrivedAtDropoff = "arrived_at_dropoff"
    case delivered, cancelled
}

/// The statuses of `tracking.order.status-changed.v1`.
public enum OrderStatusV1: String, Codable, Sendable, CaseIterable {
    case placed, accepted, preparing, ready
    case pickedUp = "picked_up"
    case delivered, cancelled

    /// What `status` means to a v1 consumer: `nil` for the driver's legs, which v1 does not
    /// tell apart (an order waiting for or driving to its pickup is still `ready`, one on its way
    /// to the customer still `picked_up`); a rejected order is cancelled.
    public init?(_ status: OrderStatus) {
        switch status {
        case .placed: self = .placed
        case .accepted: self = .accepted
        case .preparing: self = .preparing
        case .readyForPickup: self = .ready
        case .pickedUp: self = .pickedUp
        case .delivered: self = .delivered
        case .rejected, .cancelled: self = .cancelled
        case .driverAssigned, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff, .arrivedAtDropoff: return nil
        }
    }
}

/// Who takes part in an order: its customer, its restaurant and that restaurant's owner (the
/// account that signs in for it), and once assigned its driver. Its events reach these and admins.
public struct OrderParties: Codable, Sendable, Equatable {
    public var customerId: UUID
    public var restaurantId: UUID
    public var restaurantOwnerId: UUID
    public var driverId: UUID?

    public init(customerId: UUID, restaurantId: UUID, restaurantOwnerId: UUID, driverId: UUID?) {
        self.customerId = customerId
        self.restaurantId = restaurantId
        self.restaurantOwnerId = restaurantOwnerId
        self.driverId = driverId
    }

    /// The people of the order: its customer, its restaurant's owner and, once assigned, its driver.
    public var people: [UUID] {
        [customerId, restaurantOwnerId] + (driverId.map { [$0] } ?? [])
    }

    /// The parties as v1 events name them.
    public var v1: OrderPartiesV1 {
        OrderPartiesV1(customerId: customerId, restaurantId: restaurantId, driverId: driverId)
    }
}

/// Who made a move: a user in a role, or the dispatcher (no user).
public struct OrderActor: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable {
        case customer, restaurant, driver, admin, dispatch
    }

    public var userId: UUID?
    public var role: Role

    public init(userId: UUID?, role: Role) {
        self.userId = userId
        self.role = role
    }
}

/// An ordered menu item, priced from the menu when the order was placed.
public struct OrderItem: Codable, Sendable, Equatable {
    public var menuItemId: String
    public var name: String
    public var quantity: Int
    public var unitPriceCents: Int

    public init(menuItemId: String, name: String, quantity: Int, unitPriceCents: Int) {
        self.menuItemId = menuItemId
        self.name = name
        self.quantity = quantity
        self.unitPriceCents = unitPriceCents
    }
}

extension [OrderItem] {
    /// How many items these are, each counted as often as it was ordered.
    public var itemCount: Int { reduce(0) { $0 + $1.quantity } }
}

/// Where an order goes.
public struct Dropoff: Codable, Sendable, Equatable {
    public var address: String
    public var lat: Double
    public var lng: Double

    public init(address: String, lat: Double, lng: Double) {
        self.address = address
        self.lat = lat
        self.lng = lng
    }
}

/// `tracking.order.placed.v2`.
public struct OrderPlaced: DomainEvent {
    public static let type = "tracking.order.placed.v2"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderParties
    public var items: [OrderItem]
    public var totalCents: Int
    public var dropoff: Dropoff
    /// The quoted time from the restaurant to the dropoff, if one could be given.
    public var etaSeconds: Int?
    public var placedAt: Date
    /// The restaurant's name when the order was placed (for words such as a push's).
    public var restaurantName: String?

    public init(orderId: UUID, parties: OrderParties, items: [OrderItem], totalCents: Int, dropoff: Dropoff, etaSeconds: Int?, placedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.items = items
        self.totalCents = totalCents
        self.dropoff = dropoff
        self.etaSeconds = etaSeconds
        self.placedAt = placedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }

    /// The same placement for v1 consumers.
    public var v1: OrderPlacedV1 {
        OrderPlacedV1(
            orderId: orderId,
            parties: parties.v1,
            items: items.map { .init(name: $0.name, quantity: $0.quantity) },
            totalCents: totalCents,
            placedAt: placedAt
        )
    }
}

/// `tracking.order.status-changed.v2`: one move of the state machine.
public struct OrderStatusChanged: DomainEvent {
    public static let type = "tracking.order.status-changed.v2"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderParties
    public var status: OrderStatus
    public var previousStatus: OrderStatus
    public var by: OrderActor
    public var reason: String?
    /// The order's version after the move (its `ETag`).
    public var version: Int
    public var changedAt: Date
    /// The restaurant's name as the order was placed, and how many items it holds (for words).
    public var restaurantName: String?
    public var itemCount: Int?

    public init(
        orderId: UUID,
        parties: OrderParties,
        status: OrderStatus,
        previousStatus: OrderStatus,
        by: OrderActor,
        reason: String?,
        version: Int,
        changedAt: Date
    ) {
        self.orderId = orderId
        self.parties = parties
        self.status = status
        self.previousStatus = previousStatus
        self.by = by
        self.reason = reason
        self.version = version
        self.changedAt = changedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }

    /// The move as a v1 consumer sees it, given the v1 status the order last had there: `nil`
    /// when the move means nothing in v1 (a driver's leg, an unassignment).
    public func v1(after previous: OrderStatusV1) -> OrderStatusChangedV1? {
        guard let status = OrderStatusV1(status), status != previous else { return nil }
        return OrderStatusChangedV1(orderId: orderId, parties: parties.v1, status: status, previousStatus: previous, changedAt: changedAt)
    }
}

/// `tracking.order.driver-assigned.v2`.
public struct DriverAssigned: DomainEvent {
    public static let type = "tracking.order.driver-assigned.v2"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    /// With the assigned driver.
    public var parties: OrderParties
    /// The driver's road time to the restaurant and on to the dropoff.
    public var etaSeconds: Int?
    public var assignedAt: Date
    /// The restaurant's name as the order was placed, and how many items it holds (for words).
    public var restaurantName: String?
    public var itemCount: Int?

    public init(orderId: UUID, parties: OrderParties, etaSeconds: Int?, assignedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.etaSeconds = etaSeconds
        self.assignedAt = assignedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }

    public var v1: DriverAssignedV1 {
        DriverAssignedV1(orderId: orderId, parties: parties.v1, assignedAt: assignedAt)
    }
}

/// `tracking.order.arriving.v1`: the driver is about to reach the dropoff — published once per
/// order, when its ETA to the dropoff first falls to `threshold` or less after the pickup.
public struct OrderArriving: DomainEvent {
    public static let type = "tracking.order.arriving.v1"
    public static let topic = TopicCatalog.trackingOrders
    /// How near (in seconds of road) an order is announced as arriving.
    public static let threshold = 180
    public var orderId: UUID
    public var parties: OrderParties
    public var etaSeconds: Int
    public var arrivingAt: Date
    /// The restaurant's name as the order was placed.
    public var restaurantName: String?

    public init(orderId: UUID, parties: OrderParties, etaSeconds: Int, arrivingAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.etaSeconds = etaSeconds
        self.arrivingAt = arrivingAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.driver.location-updated.v2`: a driver's position (WGS 84), with the order they are
/// delivering, if any, and its ETA from here.
public struct DriverLocationUpdated: DomainEvent {
    public static let type = "tracking.driver.location-updated.v2"
    public static let topic = TopicCatalog.trackingLocations
    public var driverId: UUID
    public var orderId: UUID?
    public var latitude: Double
    public var longitude: Double
    /// Degrees clockwise from north, if known.
    public var heading: Double?
    public var speedMps: Double?
    public var accuracyM: Double?
    /// Seconds to the order's dropoff (through its pickup if not yet picked up).
    public var etaSeconds: Int?
    public var recordedAt: Date

    public init(
        driverId: UUID,
        orderId: UUID?,
        latitude: Double,
        longitude: Double,
        heading: Double?,
        speedMps: Double?,
        accuracyM: Double?,
        etaSeconds: Int?,
        recordedAt: Date
    ) {
        self.driverId = driverId
        self.orderId = orderId
        self.latitude = latitude
        self.longitude = longitude
        self.heading = heading
        self.speedMps = speedMps
        self.accuracyM = accuracyM
        self.etaSeconds = etaSeconds
        self.recordedAt = recordedAt
    }

    public var aggregateID: String { driverId.uuidString.lowercased() }
}

/// `tracking.restaurant.changed.v1`: a restaurant was made (by an admin) or changed (by its owner
/// or an admin): its name, cuisine and whether it takes orders, at its new version. The menu and
/// the opening hours are read from the API.
public struct RestaurantChanged: DomainEvent {
    public enum Change: String, Codable, Sendable { case created, updated }

    public static let type = "tracking.restaurant.changed.v1"
    public static let topic = TopicCatalog.trackingRestaurants
    public var restaurantId: UUID
    public var ownerId: UUID
    public var change: Change
    public var name: String
    public var cuisine: String?
    public var isOpen: Bool
    public var version: Int
    public var changedAt: Date

    public init(restaurantId: UUID, ownerId: UUID, change: Change, name: String, cuisine: String?, isOpen: Bool, version: Int, changedAt: Date) {
        self.restaurantId = restaurantId
        self.ownerId = ownerId
        self.change = change
        self.name = name
        self.cuisine = cuisine
        self.isOpen = isOpen
        self.version = version
        self.changedAt = changedAt
    }

    public var aggregateID: String { restaurantId.uuidString.lowercased() }
}

// MARK: v1, as first published

/// The parties of a v1 event: `restaurantId` is the restaurant's id.
public struct OrderPartiesV1: Codable, Sendable, Equatable {
    public var customerId: UUID
    public var restaurantId: UUID
    public var driverId: UUID?

    public init(customerId: UUID, restaurantId: UUID, driverId: UUID?) {
        self.customerId = customerId
        self.restaurantId = restaurantId
        self.driverId = driverId
    }
}

/// `tracking.order.placed.v1`.
public struct OrderPlacedV1: DomainEvent {
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
    public var parties: OrderPartiesV1
    public var items: [Item]
    public var totalCents: Int
    public var placedAt: Date

    public init(orderId: UUID, parties: OrderPartiesV1, items: [Item], totalCents: Int, placedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.items = items
        self.totalCents = totalCents
        self.placedAt = placedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.order.status-changed.v1`.
public struct OrderStatusChangedV1: DomainEvent {
    public static let type = "tracking.order.status-changed.v1"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderPartiesV1
    public var status: OrderStatusV1
    public var previousStatus: OrderStatusV1
    public var changedAt: Date

    public init(orderId: UUID, parties: OrderPartiesV1, status: OrderStatusV1, previousStatus: OrderStatusV1, changedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.status = status
        self.previousStatus = previousStatus
        self.changedAt = changedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.order.driver-assigned.v1`.
public struct DriverAssignedV1: DomainEvent {
    public static let type = "tracking.order.driver-assigned.v1"
    public static let topic = TopicCatalog.trackingOrders
    public var orderId: UUID
    public var parties: OrderPartiesV1
    public var assignedAt: Date

    public init(orderId: UUID, parties: OrderPartiesV1, assignedAt: Date) {
        self.orderId = orderId
        self.parties = parties
        self.assignedAt = assignedAt
    }

    public var aggregateID: String { orderId.uuidString.lowercased() }
}

/// `tracking.driver.location-updated.v1`: superseded by v2 before any service published it;
/// kept in the catalog so a consumer written against it still finds its schema.
public struct DriverLocationUpdatedV1: DomainEvent {
    public static let type = "tracking.driver.location-updated.v1"
    public static let topic = TopicCatalog.trackingLocations
    public var driverId: UUID
    public var orderId: UUID?
    public var latitude: Double
    public var longitude: Double
    public var heading: Double?
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
