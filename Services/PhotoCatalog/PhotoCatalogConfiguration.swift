import Contracts
import Database
import Foundation
import KeySetClient
import ServiceAssembly
import ServiceKit

/// Everything `photo-catalog` reads from its environment; each variable is described in
/// Services/PhotoCatalog/README.md, under "Configuration".
struct PhotoCatalogConfiguration: ServiceConfiguration {
    /// Its HTTP server, database and event bus.
    var standard: StandardSettings
    var http: HTTPServerSettings { standard.http }
    /// Where Splash is reached from outside (the gateway), without a trailing slash: pagination
    /// links and fixture image URLs point there.
    var publicBase: String
    /// `nil`: no Unsplash key, so the bundled fixture set is served.
    var unsplash: UnsplashSettings?
    var cache: CacheSettings
    /// Where auth publishes its verification keys, and the issuer its tokens carry.
    var keys: KeySetSettings
    /// Lets other Splash services report a photo's use for one of their users.
    var serviceToken: ServiceToken?
    var downloads: DownloadTracker.Settings
    /// The consumer group the replicas read `auth.users` in, to erase deleted users.
    var erasureGroup: String

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        standard = try StandardSettings(from: reader, defaultPort: 8082)
        publicBase = try reader.publicBase("CATALOG_PUBLIC_URL")
        unsplash = try UnsplashSettings(from: reader)
        cache = try CacheSettings(from: reader)
        keys = try KeySetSettings(from: reader, prefix: "CATALOG")
        serviceToken = try ServiceToken.read("CATALOG_SERVICE_TOKEN", from: reader)
        downloads = DownloadTracker.Settings(
            retryBase: try reader.duration("CATALOG_DOWNLOAD_RETRY_BASE", default: .seconds(5), minimum: .milliseconds(10)),
            maxAttempts: try reader.integer("CATALOG_DOWNLOAD_MAX_ATTEMPTS", default: 8, in: 1...50)
        )
        erasureGroup = try reader.string("CATALOG_ERASURE_GROUP", default: ConsumerGroupCatalog.catalogErasure.name)
    }
}

/// How the catalog reaches Unsplash, and how much of its hourly budget it keeps back.
struct UnsplashSettings: Sendable {
    var baseURL: URL
    /// The application's access key: sent as `Authorization: Client-ID …`, never logged or returned.
    var accessKey: String
    var timeout: Duration
    /// Below this many remaining requests, only cached answers are served.
    var budgetReserve: Int
    /// How long Unsplash's budget lasts before it is refilled (an hour).
    var budgetWindow: Duration
    /// How many upstream connections the pool keeps.
    var maxConnections: Int

    /// `nil` when no access key is configured. The other settings are read and checked either
    /// way, so a malformed one is reported before the day a key is added.
    init?(from reader: ConfigurationReader) throws(ConfigurationError) {
        let key = try reader.optionalSecret("UNSPLASH_ACCESS_KEY", expected: "an Unsplash access key")
        baseURL = try reader.url("UNSPLASH_API_URL", schemes: ["http", "https"], default: URL(string: "https://api.unsplash.com/")!)
        timeout = try reader.duration("UNSPLASH_TIMEOUT", default: .seconds(10), minimum: .milliseconds(100))
        budgetReserve = try reader.integer("CATALOG_BUDGET_RESERVE", default: 10, in: 0...100_000)
        budgetWindow = try reader.duration("CATALOG_BUDGET_WINDOW", default: .seconds(3_600), minimum: .seconds(1))
        maxConnections = try reader.integer("UNSPLASH_MAX_CONNECTIONS", default: 16, in: 1...256)
        guard let key else { return nil }
        accessKey = key
    }
}

/// How long cached answers stay fresh, how long stale ones may still be served, and how large the
/// cache may grow.
struct CacheSettings: Sendable {
    var listLifetime: Duration
    var searchLifetime: Duration
    var photoLifetime: Duration
    /// After its lifetime, an answer is still served for this long while a refresh runs behind it.
    var staleWhileRevalidate: Duration
    /// When Unsplash fails or the budget is spent, an answer up to this old is served rather than
    /// an error.
    var staleIfError: Duration
    var maxEntries: Int
    var maxBytes: Int

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        listLifetime = try reader.duration("CATALOG_FRESH_LIST", default: .seconds(600), minimum: .seconds(1))
        searchLifetime = try reader.duration("CATALOG_FRESH_SEARCH", default: .seconds(3_600), minimum: .seconds(1))
        photoLifetime = try reader.duration("CATALOG_FRESH_PHOTO", default: .seconds(86_400), minimum: .seconds(1))
        staleWhileRevalidate = try reader.duration("CATALOG_STALE_WHILE_REVALIDATE", default: .seconds(3_600))
        staleIfError = try reader.duration("CATALOG_STALE_IF_ERROR", default: .seconds(7 * 86_400))
        maxEntries = try reader.integer("CATALOG_CACHE_MAX_ENTRIES", default: 50_000, in: 1...10_000_000)
        maxBytes = try reader.byteCount("CATALOG_CACHE_MAX_BYTES", default: 512 << 20, in: (1 << 20)...(1 << 40))
    }

    func lifetime(of kind: UnsplashRequest.Kind) -> Duration {
        switch kind {
        case .list, .randomPool: listLifetime
        case .search: searchLifetime
        case .photo: photoLifetime
        }
    }
}
