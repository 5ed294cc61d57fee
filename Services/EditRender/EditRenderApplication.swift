import AsyncHTTPClient
import Blobs
import CatalogClient
import Contracts
import Database
import EventBus
import Foundation
import Hummingbird
import Imaging
import Kafka
import KeySetClient
import Logging
import NIOPosix
import PostgresNIO
import ServiceAssembly
import ServiceKit

/// The schema edit-render owns.
let renderSchema = "render"

/// Builds edit-render for its role: the API (filters, previews, edits, uploads, media), the render
/// workers (a consumer of `render.jobs` in the group `RENDER_WORKER_GROUP`, `edit-render-workers` by default), or both. Either way it
/// runs the outbox relay, and a renderer with `RENDER_WORKERS` threads; the API also erases
/// deleted users (`auth.users` in `RENDER_ERASURE_GROUP`).
/// - Throws: when a migration does not apply, Kafka refuses the topics, or libvips cannot start.
func buildApplication(_ config: EditRenderConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let base = try await EventedService.prepare(
        "edit-render",
        schema: renderSchema,
        migrations: try Migration.load(bundle: .module),
        topics: [TopicCatalog.renderJobs, TopicCatalog.renderResults, TopicCatalog.renderErasures],
        settings: config.standard,
        logger: logger
    )
    let client = base.client
    let outbox = base.outbox
    let http = HTTPClient.standard(logger: logger)
    let renderer = try Renderer(threads: config.workers)
    let (blobs, blobHTTP) = try config.blobStore.make(logger: logger)
    let metrics = RenderMetrics(factory: runtime.metrics.factory)
    let store = EditStore(client: client, outbox: outbox, logger: logger)
    let catalog = PhotoCatalogClient(http: http, baseURL: config.photoCatalogURL, serviceToken: config.catalogServiceToken, logger: logger)
    let sources = SourceFetcher(
        blobs: blobs,
        store: store,
        http: http,
        catalog: catalog,
        allowedHosts: config.sourceHosts,
        allowsPrivateHosts: config.allowsPrivateSources,
        maxBytes: config.maxUploadBytes,
        logger: logger
    )

    var parts = base.applicationParts(metrics: runtime.metrics)
    parts.services +=
        [renderer, HTTPClientService(client: http), base.collectingTombstones(of: "edit_tombstones")]
        + (blobHTTP.map { [HTTPClientService(client: $0)] } ?? [])
    if config.role.runsWorkers {
        let job = RenderJob(
            client: client,
            outbox: outbox,
            sources: sources,
            renderer: renderer,
            blobs: blobs,
            catalog: catalog,
            metrics: metrics,
            logger: logger,
            maxAttempts: config.standard.events.retry.attempts
        )
        let consumer = base.consumer(
            group: config.workerGroup,
            topics: [TopicCatalog.renderJobs],
            registry: EventRegistry([EditRequested.self]),
            clientID: "edit-render-worker"
        ) { received in
            guard let requested = received.event as? EditRequested else { return }
            try await job.handle(requested)
        }
        parts.services.append(consumer)
        parts.services.append(WorkerRoster(client: client, consumer: consumer, threads: config.workers, interval: .seconds(3), logger: logger))
    }
    parts.routePolicies = [
        RoutePolicy(pathPrefix: "/v1/uploads", maxBodySize: config.maxUploadBytes, timeout: .seconds(120)),
        RoutePolicy(pathPrefix: "/v1", maxBodySize: 64 << 10, timeout: config.standard.http.requestTimeout),
    ]
    let links = config.blobStore.mediaLinks(config.media.links, store: blobs)
    let keys = KeySetCache(config.keys, client: http, logger: logger)
    if config.role.servesAPI {
        // Fetched as the API starts and kept fresh, so no request waits for it; workers verify
        // no tokens.
        parts.services.append(keys)
        base.refusingDeletedUsers(of: keys, in: &parts)
        // A deleted user is erased by the API's replicas (a deployment always has them; workers
        // may scale to a handful or to none).
        let erasure = UserErasure(outbox: outbox, blobs: blobs, logger: logger)
        parts.services.append(base.erasingDeletedUsers(group: config.erasureGroup, inboxName: UserErasure.consumer, keys: keys, erase: erasure.erase))
    }
    logger.info("edit-render starting", metadata: ["role": "\(config.role.rawValue)", "workers": "\(config.workers)"])
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        guard config.role.servesAPI else { return }
        let group = router.group("v1")
        EditsController(store: store, sources: sources, renderer: renderer, links: links, keys: keys, metrics: metrics).addRoutes(to: group)
        UploadsController(store: store, blobs: blobs, keys: keys, links: links, maxBytes: config.maxUploadBytes).addRoutes(to: group)
        MediaController(blobs: blobs, links: links, variants: ImageVariants(blobs: blobs, renderer: renderer, maxBytes: config.maxUploadBytes))
            .addRoutes(to: group)
        WorkersController(client: client, keys: keys).addRoutes(to: group)
    }
}
