import AsyncHTTPClient
import Contracts
import Database
import EventBus
import Foundation
import Hummingbird
import KeySetClient
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceAssembly
import ServiceKit

/// The schema photo-catalog owns.
let catalogSchema = "catalog"

/// Builds photo-catalog: applies its migrations (before anything else touches the schema), then assembles the `/v1` routes over either
/// Unsplash behind the shared cache (an access key is configured) or the bundled fixture set, the
/// download tracker, the HTTP client both Unsplash and auth's key set are reached with, and the
/// erasure of deleted users (`auth.users` in `CATALOG_ERASURE_GROUP`, acknowledged on
/// `catalog.erasures` through the outbox).
/// - Throws: when a migration does not apply, Kafka refuses the topics, or the fixture set is
///   missing from the bundle.
func buildApplication(_ config: PhotoCatalogConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let base = try await EventedService.prepare(
        "photo-catalog",
        schema: catalogSchema,
        migrations: try Migration.load(bundle: .module, subdirectory: "Migrations"),
        topics: [TopicCatalog.catalogErasures],
        settings: config.standard,
        logger: logger
    )
    let client = base.client
    let http = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: httpClientConfiguration(config),
        backgroundActivityLogger: logger
    )
    let metrics = CatalogMetrics(factory: runtime.metrics.factory)
    let keys = KeySetCache(config.keys, client: http, logger: logger)

    let source: PhotoSource
    let reporter: (any DownloadReporter)?
    if let unsplash = config.unsplash {
        let upstream = UnsplashClient(settings: unsplash, client: http, logger: logger)
        let store = ResponseStore(client: client, logger: logger, maxEntries: config.cache.maxEntries, maxBytes: config.cache.maxBytes)
        let cached = CachedUnsplash(upstream: upstream, store: store, settings: config.cache, unsplash: unsplash, metrics: metrics, logger: logger)
        source = .unsplash(cached)
        reporter = UnsplashDownloadReporter(photos: cached, upstream: upstream, metrics: metrics)
        logger.info("Serving Unsplash through the cache", metadata: ["upstream": "\(unsplash.baseURL)"])
    } else {
        source = .fixtures(try FixtureCatalog(bundle: .module, publicBase: config.publicBase))
        reporter = nil
        logger.info("No UNSPLASH_ACCESS_KEY: serving the bundled fixture photos")
    }
    let downloads = DownloadTracker(client: client, reporter: reporter, settings: config.downloads, metrics: metrics, logger: logger)
    let controller = CatalogController(
        source: source,
        downloads: downloads,
        keys: keys,
        serviceToken: config.serviceToken,
        publicBase: config.publicBase
    )

    let erasure = UserErasure(outbox: base.outbox, logger: logger)

    var parts = base.applicationParts(metrics: runtime.metrics)
    // The key set is fetched as the service starts and kept fresh, so no request waits for it.
    parts.services += [
        HTTPClientService(client: http), keys, downloads,
        base.erasingDeletedUsers(group: config.erasureGroup, inboxName: UserErasure.consumer, keys: keys, erase: erasure.erase),
    ]
    base.refusingDeletedUsers(of: keys, in: &parts)
    // Every request to the catalog is a GET or a bodiless POST.
    parts.routePolicies = [RoutePolicy(pathPrefix: "/v1", maxBodySize: 16 << 10, timeout: config.http.requestTimeout)]
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        controller.addRoutes(to: router.group("v1"))
    }
}

/// Pooled keep-alive connections to Unsplash (and auth's key set); no redirects followed, so the
/// key is never sent anywhere but where it was meant to go.
private func httpClientConfiguration(_ config: PhotoCatalogConfiguration) -> HTTPClient.Configuration {
    var configuration = HTTPClient.Configuration()
    configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: config.unsplash?.maxConnections ?? 8)
    configuration.redirectConfiguration = .disallow
    return configuration
}
