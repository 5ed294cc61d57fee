import Contracts
import EventBus
import Foundation
import ServiceKit

/// Who may see an event: the channels it is pushed on, derived from its type and payload.
struct Audience: Equatable {
    var channels: [RealtimeChannel]
    /// Driver positions are superseded by the next position of the same driver on the same order.
    var supersedingKey: String?
    /// The parties of the order an event is about, for `OrderDirectory`.
    var order: (id: String, parties: OrderParties)?

    static func == (lhs: Audience, rhs: Audience) -> Bool {
        lhs.channels == rhs.channels && lhs.supersedingKey == rhs.supersedingKey
            && lhs.order?.id == rhs.order?.id && lhs.order?.parties == rhs.order?.parties
    }

    /// The topics whose events realtime clients may see (`tracking.restaurants` through Supabase
    /// Realtime's `restaurants` changes only; the erasure acknowledgements on the `admin` channel
    /// only, for the console). `render.jobs` is the workers' queue and carries nothing a client
    /// needs.
    static let topics: [Topic] =
        [
            TopicCatalog.authUsers, TopicCatalog.renderResults, TopicCatalog.socialActivity,
            TopicCatalog.trackingOrders, TopicCatalog.trackingLocations, TopicCatalog.trackingRestaurants,
        ] + Erasures.services.map(\.topic)

    /// The audience of `envelope`; `nil` for a type the gateway does not push.
    /// - Throws: `DecodingError` when the payload does not match its type.
    init?(_ envelope: EventEnvelope) throws {
        try self.init(EventPayload(envelope))
    }

    /// The same, from a payload another reader may have read already.
    init?(_ payload: EventPayload) throws {
        let envelope = payload.envelope
        switch envelope.type {
        case ProfileUpdated.type:
            let event = try payload.decode(ProfileUpdated.self)
            self.init(channels: [.profiles, .user(Self.id(event.userId))])
        case UserRegistered.type:
            self.init(user: try payload.decode(UserRegistered.self).userId)
        case OnboardingCompleted.type:
            self.init(user: try payload.decode(OnboardingCompleted.self).userId)
        case EmailConfirmed.type:
            self.init(user: try payload.decode(EmailConfirmed.self).userId)
        case EmailChanged.type:
            self.init(user: try payload.decode(EmailChanged.self).userId)
        case EditCompleted.type:
            self.init(user: try payload.decode(EditCompleted.self).userId)
        case EditFailed.type:
            self.init(user: try payload.decode(EditFailed.self).userId)
        case PhotoLiked.type:
            self.init(user: try payload.decode(PhotoLiked.self).userId)
        case PhotoUnliked.type:
            self.init(user: try payload.decode(PhotoUnliked.self).userId)
        case PostCreated.type:
            // New posts appear in everyone's feed live.
            self.init(channels: [.feed, .user(Self.id(try payload.decode(PostCreated.self).userId))])
        case PostDeleted.type:
            self.init(channels: [.feed, .user(Self.id(try payload.decode(PostDeleted.self).userId))])
        case CollectionChanged.type:
            self.init(user: try payload.decode(CollectionChanged.self).userId)
        case OrderPlaced.type:
            let event = try payload.decode(OrderPlaced.self)
            self.init(order: event.orderId, parties: event.parties)
        case OrderStatusChanged.type:
            let event = try payload.decode(OrderStatusChanged.self)
            self.init(order: event.orderId, parties: event.parties)
        case DriverAssigned.type:
            let event = try payload.decode(DriverAssigned.self)
            self.init(order: event.orderId, parties: event.parties)
        case OrderArriving.type:
            let event = try payload.decode(OrderArriving.self)
            self.init(order: event.orderId, parties: event.parties)
        case DriverLocationUpdated.type:
            // A driver between orders is seen by nobody.
            let event = try payload.decode(DriverLocationUpdated.self)
            guard let order = event.orderId else { return nil }
            self.init(channels: [.order(Self.id(order))], supersedingKey: "\(Self.id(event.driverId))/\(Self.id(order))")
        default:
            // Among them the v1 twins of tracking's v2 events: the v2 one is pushed instead.
            return nil
        }
    }

    init(channels: [RealtimeChannel], supersedingKey: String? = nil, order: (id: String, parties: OrderParties)? = nil) {
        self.channels = channels
        self.supersedingKey = supersedingKey
        self.order = order
    }

    /// An event only admins see (a v1 twin, a position between orders, a restaurant change): a
    /// position supersedes the queued one of the same type and driver.
    static func adminOnly(_ envelope: EventEnvelope) -> Audience {
        let positions = envelope.type.hasPrefix("tracking.driver.location-updated.")
        return Audience(channels: [], supersedingKey: positions ? "\(envelope.type)/\(envelope.subject ?? "")" : nil)
    }

    /// The same audience, and admins.
    func addingAdmin() -> Audience {
        var audience = self
        audience.channels.append(.admin)
        return audience
    }

    /// An event about one user: their `me` channel.
    private init(user: UUID) {
        self.init(channels: [.user(Self.id(user))])
    }

    /// An order event: the order's channel and the `me` channel of each of its parties.
    private init(order: UUID, parties: OrderParties) {
        self.init(
            channels: [.order(Self.id(order))] + parties.people.map { .user(Self.id($0)) },
            order: (Self.id(order), parties)
        )
    }

    private static func id(_ uuid: UUID) -> String { uuid.lowercased }
}
