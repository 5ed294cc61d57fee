/// The consumer groups the services read in by default, and what they read: the console's
/// Consumers page shows their lag. (Each gateway replica reads in a group of its own from the
/// newest offset and commits nothing, so it has no lag to show.)
public enum ConsumerGroupCatalog {
    public struct Group: Sendable, Hashable {
        public var name: String
        public var service: String
        public var topics: [Topic]
    }

    /// auth's projection of who owns restaurants (`AUTH_CONSUMER_GROUP`): an owner's account is
    /// not deleted until they are handed over.
    public static let auth = Group(name: "auth", service: "auth", topics: [TopicCatalog.trackingRestaurants])

    /// social's projections of profiles and renders (`SOCIAL_PROJECTION_GROUP`).
    public static let socialProjections = Group(
        name: "social-projections",
        service: "social",
        topics: [TopicCatalog.authUsers, TopicCatalog.renderResults]
    )
    /// edit-render's workers (`RENDER_WORKER_GROUP`).
    public static let renderWorkers = Group(name: "edit-render-workers", service: "edit-render", topics: [TopicCatalog.renderJobs])

    /// edit-render's erasure of deleted users (`RENDER_ERASURE_GROUP`), run by its API replicas.
    public static let renderErasure = Group(name: "edit-render-erasure", service: "edit-render", topics: [TopicCatalog.authUsers])

    /// photo-catalog's erasure of deleted users (`CATALOG_ERASURE_GROUP`).
    public static let catalogErasure = Group(name: "photo-catalog-erasure", service: "photo-catalog", topics: [TopicCatalog.authUsers])

    /// tracking's erasure of deleted users (`TRACKING_ERASURE_GROUP`).
    public static let trackingErasure = Group(name: "tracking-erasure", service: "tracking", topics: [TopicCatalog.authUsers])

    /// notify's consumers of the events it tells people of (`NOTIFY_CONSUMER_GROUP`).
    public static let notify = Group(
        name: "notify",
        service: "notify",
        topics: [
            TopicCatalog.trackingOrders, TopicCatalog.trackingRestaurants, TopicCatalog.renderResults, TopicCatalog.socialActivity,
            TopicCatalog.authUsers,
        ]
    )

    public static let all = [auth, socialProjections, renderWorkers, renderErasure, catalogErasure, trackingErasure, notify]
}
