/// Every topic Splash services publish to, with partition counts and retention (docs/events.md).
/// The embedded broker creates these, `deploy/kafka/topics.txt` mirrors them for
/// docker-compose, and `DeploymentTests` checks that the two agree.
public enum TopicCatalog {
    /// Keyed by user id: `auth.user.registered.v1`, `auth.profile.updated.v1`,
    /// `auth.user.onboarding-completed.v1`, `auth.user.email-confirmed.v1`,
    /// `auth.user.email-changed.v1`, `auth.user.deleted.v1`.
    public static let authUsers = Topic("auth.users", partitions: 6, retention: .days(30), cleanupPolicy: .compactAndDelete)
    /// Keyed by edit id: `render.edit.requested.v1`.
    public static let renderJobs = Topic("render.jobs", partitions: 12, retention: .days(1))
    /// Keyed by edit id: `render.edit.completed.v1`, `render.edit.failed.v1`.
    public static let renderResults = Topic("render.results", partitions: 6, retention: .days(7))
    /// Keyed by user id: likes, posts and collection changes.
    public static let socialActivity = Topic("social.activity", partitions: 6, retention: .days(7))
    /// Keyed by order id: placed, status changes, driver assignment.
    public static let trackingOrders = Topic("tracking.orders", partitions: 6, retention: .days(7))
    /// Keyed by restaurant id: `tracking.restaurant.changed.v1`.
    public static let trackingRestaurants = Topic("tracking.restaurants", partitions: 3, retention: .days(7))
    /// Keyed by driver id: `tracking.driver.location-updated.v1`.
    public static let trackingLocations = Topic("tracking.locations", partitions: 12, retention: .hours(1))

    /// Keyed by user id, one per erasing service: `<service>.user.erased.v1`, what the service
    /// removed of a deleted user (`Erasures`). Kept as long as `auth.users`.
    public static let socialErasures = Topic("social.erasures", partitions: 3, retention: .days(30))
    public static let renderErasures = Topic("render.erasures", partitions: 3, retention: .days(30))
    public static let catalogErasures = Topic("catalog.erasures", partitions: 3, retention: .days(30))
    public static let trackingErasures = Topic("tracking.erasures", partitions: 3, retention: .days(30))
    public static let notifyErasures = Topic("notify.erasures", partitions: 3, retention: .days(30))

    /// Keyed by channel topic: Supabase Realtime broadcasts between the gateway's replicas (a
    /// client's message to the others on its channel). Not domain events: JSON of the gateway's
    /// own, read by the gateways only.
    public static let realtimeBroadcasts = Topic("realtime.broadcasts", partitions: 6, retention: .hours(1))

    /// Supabase Realtime presence between the gateway's replicas: each replica's tracks, untracks
    /// and heartbeats (every 10 s, of everything its clients track). One partition, so one
    /// replica's records are read in the order it wrote them; kept briefly, as an entry is dropped
    /// 30 s after its last heartbeat anyway (and a person's presence is their data).
    public static let gatewayPresence = Topic("gateway.presence", partitions: 1, retention: .seconds(600))

    /// The topics events are published to.
    public static let eventTopics: [Topic] = [
        authUsers, renderJobs, renderResults, socialActivity, trackingOrders, trackingLocations, trackingRestaurants,
        socialErasures, renderErasures, catalogErasures, trackingErasures, notifyErasures,
    ]

    /// Every topic, dead-letter topics included.
    public static let all: [Topic] = eventTopics + eventTopics.map(\.deadLetter) + [realtimeBroadcasts, gatewayPresence]
}
