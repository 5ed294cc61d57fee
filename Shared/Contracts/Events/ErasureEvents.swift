import Foundation

/// `<service>.user.erased.v1`: a service has erased what it kept of a deleted user
/// (`auth.user.deleted.v1`), in the transaction that recorded the deletion, and says how many of
/// each thing it removed (`{"likes": 3, "posts": 1}`: names of the service's own). A deletion is
/// complete when every service in `Erasures.all` has acknowledged it.
public protocol ErasureAcknowledgement: DomainEvent {
    /// The service that erased, as the console names it.
    static var service: String { get }
    var userId: UUID { get }
    var erasedAt: Date { get }
    var counts: [String: Int] { get }
    init(userId: UUID, erasedAt: Date, counts: [String: Int])
}

/// A service that erases deleted users: its acknowledgement's type, topic and name.
public protocol ErasingService: Sendable {
    static var eventType: String { get }
    static var topic: Topic { get }
    static var name: String { get }
}

/// The acknowledgement of `Service`: one shape for every service, a type and topic of its own.
public struct UserErased<Service: ErasingService>: ErasureAcknowledgement {
    public static var type: String { Service.eventType }
    public static var topic: Topic { Service.topic }
    public static var service: String { Service.name }
    public var userId: UUID
    public var erasedAt: Date
    public var counts: [String: Int]

    public init(userId: UUID, erasedAt: Date, counts: [String: Int]) {
        self.userId = userId
        self.erasedAt = erasedAt
        self.counts = counts
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// Every service that erases a deleted user, with its acknowledgement.
public enum Erasures {
    public static let all: [any ErasureAcknowledgement.Type] = [
        SocialUserErased.self, RenderUserErased.self, CatalogUserErased.self, TrackingUserErased.self, NotifyUserErased.self,
    ]

    /// Each erasing service's name and the topic it acknowledges on, in `all`'s order.
    public static let services: [(name: String, topic: Topic)] = all.map { acknowledgement in
        (acknowledgement.service, acknowledgement.topic)
    }
}

/// `social.user.erased.v1` on `social.erasures`: likes, collections, posts and their objects,
/// avatars and the profile projection.
public typealias SocialUserErased = UserErased<SocialErasure>
public enum SocialErasure: ErasingService {
    public static let eventType = "social.user.erased.v1"
    public static let topic = TopicCatalog.socialErasures
    public static let name = "social"
}

/// `render.user.erased.v1` on `render.erasures`: uploads, edits and their blobs.
public typealias RenderUserErased = UserErased<RenderErasure>
public enum RenderErasure: ErasingService {
    public static let eventType = "render.user.erased.v1"
    public static let topic = TopicCatalog.renderErasures
    public static let name = "edit-render"
}

/// `catalog.user.erased.v1` on `catalog.erasures`: the user ids of download reports.
public typealias CatalogUserErased = UserErased<CatalogErasure>
public enum CatalogErasure: ErasingService {
    public static let eventType = "catalog.user.erased.v1"
    public static let topic = TopicCatalog.catalogErasures
    public static let name = "photo-catalog"
}

/// `tracking.user.erased.v1` on `tracking.erasures`: a customer's details on their orders, a
/// driver's positions and held orders.
public typealias TrackingUserErased = UserErased<TrackingErasure>
public enum TrackingErasure: ErasingService {
    public static let eventType = "tracking.user.erased.v1"
    public static let topic = TopicCatalog.trackingErasures
    public static let name = "tracking"
}

/// `notify.user.erased.v1` on `notify.erasures`: devices, settings, the delivery log and mail.
public typealias NotifyUserErased = UserErased<NotifyErasure>
public enum NotifyErasure: ErasingService {
    public static let eventType = "notify.user.erased.v1"
    public static let topic = TopicCatalog.notifyErasures
    public static let name = "notify"
}
