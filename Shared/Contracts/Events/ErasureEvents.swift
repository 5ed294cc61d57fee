import Foundation

/// `<service>.user.erased.v1`: a service has erased what it kept of a deleted user
/// (`auth.user.deleted.v1`), in the transaction that recorded the deletion, and says how many of
/// each thing it removed (`{"likes": 3, "posts": 1}`: names of the service's own). A deletion is
/// complete when every service in `all` has acknowledged it.
public protocol ErasureAcknowledgement: DomainEvent {
    /// The service that erased, as the console names it.
    static var service: String { get }
    var userId: UUID { get }
    var erasedAt: Date { get }
    var counts: [String: Int] { get }
    init(userId: UUID, erasedAt: Date, counts: [String: Int])
}

extension ErasureAcknowledgement {
    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// Every service that erases a deleted user, with its acknowledgement.
public enum Erasures {
    public static let all: [any ErasureAcknowledgement.Type] = [
        SocialUserErased.self, RenderUserErased.self, CatalogUserErased.self, TrackingUserErased.self, NotifyUserErased.self,
    ]
}

/// `social.user.erased.v1` on `social.erasures`: likes, collections, posts and their objects,
/// avatars and the profile projection.
public struct SocialUserErased: ErasureAcknowledgement {
    public static let type = "social.user.erased.v1"
    public static let topic = TopicCatalog.socialErasures
    public static let service = "social"
    public var userId: UUID
    public var erasedAt: Date
    public var counts: [String: Int]

    public init(userId: UUID, erasedAt: Date, counts: [String: Int]) {
        self.userId = userId
        self.erasedAt = erasedAt
        self.counts = counts
    }
}

/// `render.user.erased.v1` on `render.erasures`: uploads, edits and their blobs.
public struct RenderUserErased: ErasureAcknowledgement {
    public static let type = "render.user.erased.v1"
    public static let topic = TopicCatalog.renderErasures
    public static let service = "edit-render"
    public var userId: UUID
    public var erasedAt: Date
    public var counts: [String: Int]

    public init(userId: UUID, erasedAt: Date, counts: [String: Int]) {
        self.userId = userId
        self.erasedAt = erasedAt
        self.counts = counts
    }
}

/// `catalog.user.erased.v1` on `catalog.erasures`: the user ids of download reports.
public struct CatalogUserErased: ErasureAcknowledgement {
    public static let type = "catalog.user.erased.v1"
    public static let topic = TopicCatalog.catalogErasures
    public static let service = "photo-catalog"
    public var userId: UUID
    public var erasedAt: Date
    public var counts: [String: Int]

    public init(userId: UUID, erasedAt: Date, counts: [String: Int]) {
        self.userId = userId
        self.erasedAt = erasedAt
        self.counts = counts
    }
}

/// `tracking.user.erased.v1` on `tracking.erasures`: a customer's details on their orders, a
/// driver's positions and held orders.
public struct TrackingUserErased: ErasureAcknowledgement {
    public static let type = "tracking.user.erased.v1"
    public static let topic = TopicCatalog.trackingErasures
    public static let service = "tracking"
    public var userId: UUID
    public var erasedAt: Date
    public var counts: [String: Int]

    public init(userId: UUID, erasedAt: Date, counts: [String: Int]) {
        self.userId = userId
        self.erasedAt = erasedAt
        self.counts = counts
    }
}

/// `notify.user.erased.v1` on `notify.erasures`: devices, settings, the delivery log and mail.
public struct NotifyUserErased: ErasureAcknowledgement {
    public static let type = "notify.user.erased.v1"
    public static let topic = TopicCatalog.notifyErasures
    public static let service = "notify"
    public var userId: UUID
    public var erasedAt: Date
    public var counts: [String: Int]

    public init(userId: UUID, erasedAt: Date, counts: [String: Int]) {
        self.userId = userId
        self.erasedAt = erasedAt
        self.counts = counts
    }
}
