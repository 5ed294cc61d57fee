import Contracts
import Foundation
import KeySetClient
import ServiceAssembly
import ServiceKit

/// Everything `tracking` reads from its environment; each variable is described in
/// Services/Tracking/README.md, under "Configuration".
struct TrackingConfiguration: ServiceConfiguration {
    /// Its HTTP server, database and event bus.
    var standard: StandardSettings
    var http: HTTPServerSettings { standard.http }
    /// Where auth publishes its verification keys, and the issuer its tokens carry.
    var keys: KeySetSettings
    /// Seeds the fixture's restaurants, each with an owner account made through auth's admin API,
    /// when the restaurants table is empty.
    var seeds: Bool
    /// auth, for its admin API (`POST /auth/v1/admin/users`).
    var authURL: URL
    var authServiceToken: String?
    /// How often the dispatcher looks for orders ready for a driver.
    var dispatchInterval: Duration
    /// Reserves a driver for an order as soon as it is accepted, not once it is ready.
    var dispatchEarly: Bool
    /// The consumer group the replicas read `auth.users` in, to erase deleted users.
    var erasureGroup: String
    /// How long a driver's position waits for others to fill its batch.
    var positionsLinger: Duration

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        standard = try StandardSettings(from: reader, defaultPort: 8085)
        keys = try KeySetSettings(from: reader, prefix: "TRACKING")
        seeds = try reader.bool("TRACKING_SEED", default: true)
        authURL = try reader.url("TRACKING_AUTH_URL", schemes: ["http", "https"], default: URL(string: "http://127.0.0.1:8081")!)
        authServiceToken = try reader.optionalSecret("AUTH_SERVICE_TOKEN", expected: "auth's service token")
        dispatchInterval = try reader.duration("TRACKING_DISPATCH_INTERVAL", default: .milliseconds(500), minimum: .milliseconds(50))
        dispatchEarly = try reader.bool("TRACKING_DISPATCH_EARLY", default: false)
        erasureGroup = try reader.string("TRACKING_ERASURE_GROUP", default: ConsumerGroupCatalog.trackingErasure.name)
        positionsLinger = try reader.duration("TRACKING_POSITIONS_LINGER", default: .milliseconds(5))
        if seeds, authServiceToken == nil {
            throw ConfigurationError(
                variable: "AUTH_SERVICE_TOKEN",
                expected: "auth's service token (or AUTH_SERVICE_TOKEN_FILE), to make the seeded restaurants' owner accounts; or TRACKING_SEED=false",
                problem: .missing
            )
        }
    }
}
