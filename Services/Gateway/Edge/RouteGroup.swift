import Foundation
import HTTPTypes
import NIOCore
import ServiceKit

/// Who may call a route group, as the gateway checks it at the edge (services check again).
enum EdgeAccess: String, Sendable {
    /// Passed through untouched: GoTrue clients send their anonymous key as a bearer here.
    case passthrough
    /// Anyone; a bearer token, when sent, must be valid (and then the user's limit applies).
    case optionalUser
    /// A valid access token is required.
    case user
    /// Supabase Storage: a valid access token is required, except to download through a signed
    /// link (`GET|HEAD /storage/v1/object/sign/…`, `…/render/image/sign/…`: the link's token is
    /// the credential) or from a public bucket (`…/object/public/…`, `…/render/image/public/…`),
    /// to discover resumable uploads (`OPTIONS …/upload/resumable`), and to upload through a signed upload URL
    /// (`PUT …/object/upload/sign/…`, whose bearer is not read at all: a background upload may
    /// outlive the session that made the URL). A bearer equal to the request's `apikey` is the
    /// client's anonymous key, not a user's token (Supabase clients send it before sign-in).
    case storage
    /// The PostgREST data API: anyone, as there: without a bearer token, or with the client's
    /// anonymous key (equal to its `apikey`) as one, the call runs as the anonymous caller (public
    /// rows only); any other bearer token must be valid.
    case data

    /// Whether an anonymous call to `path` with `method` is one `.storage` lets through: a download
    /// through a signed link or from a public bucket, or TUS discovery.
    static func isAnonymousStorageCall(method: HTTPRequest.Method, path: String) -> Bool {
        // TUS discovery (`OPTIONS`): what the server takes, for anyone.
        if method == .options && path.hasPrefix("/storage/v1/upload/resumable") { return true }
        return (method == .get || method == .head)
            && (path.hasPrefix("/storage/v1/object/sign/") || path.hasPrefix("/storage/v1/object/public/")
                || path.hasPrefix("/storage/v1/render/image/sign/") || path.hasPrefix("/storage/v1/render/image/public/"))
    }

    /// Whether `method` and `path` are an upload through a signed upload URL, which `.storage`
    /// lets through whatever its bearer.
    static func isSignedStorageUpload(method: HTTPRequest.Method, path: String) -> Bool {
        method == .put && path.hasPrefix("/storage/v1/object/upload/sign/")
    }
}

/// One upstream service and the path prefixes the gateway routes to it. A class, set once from
/// configuration: every proxied call refers to its group, and a copy of a struct would retain
/// each of its strings, arrays and URL.
final class RouteGroup: Sendable {
    /// Names the group in configuration (`GATEWAY_RATE_LIMIT_<NAME>`), metrics and logs.
    let name: String
    let pathPrefixes: [String]
    /// The service's base URL; `nil` when this gateway has none configured (503).
    let upstream: URL?
    let access: EdgeAccess
    let rateLimit: RateLimit
    /// The callers' buckets of `rateLimit`, one per user or client address.
    let limiter: RateLimiter
    let maxBodySize: Int
    /// How long the upstream may take to start answering.
    let timeout: Duration
    /// `timeout`, as the edge's timers take it.
    let edgeTimeout: TimeAmount
    /// The route template that names the group in metrics (`/v1/photos/**`).
    let route: String

    init(name: String, pathPrefixes: [String], upstream: URL?, access: EdgeAccess, rateLimit: RateLimit, maxBodySize: Int, timeout: Duration) {
        self.name = name
        self.pathPrefixes = pathPrefixes
        self.upstream = upstream
        self.access = access
        self.rateLimit = rateLimit
        self.limiter = RateLimiter(rateLimit)
        self.maxBodySize = maxBodySize
        self.timeout = timeout
        self.edgeTimeout = .nanoseconds(timeout.totalNanoseconds)
        self.route = "\(pathPrefixes[0])/**"
    }

    /// Whether `path` lies under one of the group's prefixes, on a segment boundary.
    func covers(_ path: String) -> Bool {
        pathPrefixes.contains { prefix in
            guard path.hasPrefix(prefix) else { return false }
            return path.utf8.count == prefix.utf8.count || path.utf8.dropFirst(prefix.utf8.count).first == UInt8(ascii: "/")
        }
    }
}

/// The gateway's routes, one group per service (docs/architecture.md, "Services").
struct RouteTable: Sendable {
    let groups: [RouteGroup]

    /// The group serving `path`, if any.
    func group(for path: String) -> RouteGroup? {
        groups.first { $0.covers(path) }
    }

    /// The services, their prefixes and their defaults; every default can be changed per group.
    static let catalog: [(name: String, variable: String, prefixes: [String], access: EdgeAccess, rateLimit: RateLimit, maxBodySize: Int)] = [
        ("auth", "GATEWAY_AUTH_URL", ["/auth/v1"], .passthrough, RateLimit(count: 300, window: .seconds(60)), 64 << 10),
        (
            "photo_catalog", "GATEWAY_PHOTO_CATALOG_URL", ["/v1/photos", "/v1/search", "/v1/fixtures"], .optionalUser,
            RateLimit(count: 600, window: .seconds(60)), 64 << 10
        ),
        (
            "edit_render", "GATEWAY_EDIT_RENDER_URL", ["/v1/filters", "/v1/edits", "/v1/uploads"], .user, RateLimit(count: 300, window: .seconds(60)),
            26 << 20
        ),
        ("media", "GATEWAY_EDIT_RENDER_URL", ["/v1/media"], .optionalUser, RateLimit(count: 1_200, window: .seconds(60)), 0),
        (
            "social", "GATEWAY_SOCIAL_URL", ["/v1/likes", "/v1/collections", "/v1/posts", "/v1/feed"], .user,
            RateLimit(count: 600, window: .seconds(60)), 1 << 20
        ),
        // Uploads up to 25 MB, plus a multipart envelope.
        ("storage", "GATEWAY_SOCIAL_URL", ["/storage/v1"], .storage, RateLimit(count: 600, window: .seconds(60)), 26 << 20),
        (
            "tracking", "GATEWAY_TRACKING_URL", ["/v1/restaurants", "/v1/orders", "/v1/drivers"], .user,
            RateLimit(count: 1_200, window: .seconds(60)), 1 << 20
        ),
        ("notify", "GATEWAY_NOTIFY_URL", ["/v1/devices", "/v1/notification-settings"], .user, RateLimit(count: 300, window: .seconds(60)), 64 << 10),
        // `/rest/v1/{table}`, each table to the service that owns it; any other name is the
        // router's 404, written in PostgREST's shape (PGRST205).
        (
            "data_auth", "GATEWAY_AUTH_URL", ["/rest/v1/profiles", "/rest/v1/recent_signups", "/rest/v1/users"], .data,
            RateLimit(count: 600, window: .seconds(60)),
            64 << 10
        ),
        (
            "data_social", "GATEWAY_SOCIAL_URL",
            [
                "/rest/v1/likes", "/rest/v1/liked_photos", "/rest/v1/collections", "/rest/v1/collection_photos", "/rest/v1/posts",
            ], .data,
            RateLimit(count: 600, window: .seconds(60)), 1 << 20
        ),
        (
            "data_tracking", "GATEWAY_TRACKING_URL", ["/rest/v1/restaurants", "/rest/v1/orders", "/rest/v1/rpc/advance_order"], .data,
            RateLimit(count: 1_200, window: .seconds(60)), 1 << 20
        ),
    ]
}
