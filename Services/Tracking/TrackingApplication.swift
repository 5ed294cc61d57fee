import AsyncHTTPClient
import Contracts
import DataAPI
import Database
import EventBus
import Foundation
import Hummingbird
import Identity
import Kafka
import KeySetClient
import Logging
import NIOPosix
import PostgresNIO
import RoadNetwork
import ServiceAssembly
import ServiceKit

/// The schema tracking owns.
let trackingSchema = "tracking"

/// Builds tracking: restaurants (seeded from the Helsinki fixture on an empty table), orders and
/// their state machine with the outbox relay of `tracking.orders`, the dispatcher, drivers'
/// positions straight to `tracking.locations`, and the erasure of deleted users (`auth.users` in
/// `TRACKING_ERASURE_GROUP`).
/// - Throws: when a migration does not apply, Kafka refuses the topics, or the road graph cannot
///   be read.
func buildApplication(_ config: TrackingConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let base = try await EventedService.prepare(
        "tracking",
        schema: trackingSchema,
        migrations: try Migration.load(bundle: .module),
        topics: [TopicCatalog.trackingOrders, TopicCatalog.trackingLocations, TopicCatalog.trackingRestaurants, TopicCatalog.trackingErasures],
        settings: config.standard,
        logger: logger
    )
    let graph = try RoadGraph.helsinki()
    let client = base.client
    let outbox = base.outbox
    let http = HTTPClient.standard(logger: logger)
    let keys = KeySetCache(config.keys, client: http, logger: logger)

    let restaurants = RestaurantStore(client: client, outbox: outbox, logger: logger)
    let orders = OrderStore(client: client, outbox: outbox, graph: graph, logger: logger)
    // Positions have a producer of their own: a stream of small sends, one per report, that
    // batch better by lingering — which the outbox's producer does not do.
    var positionsProducerConfiguration = config.standard.events.producer(clientID: "tracking-positions")
    positionsProducerConfiguration.linger = config.positionsLinger
    let positionsProducer = try KafkaProducer(configuration: positionsProducerConfiguration, logger: logger)
    let serviceReads = PostgresClient(configuration: config.standard.database.serviceSessions(maximumConnections: 4), backgroundLogger: logger)
    let positions = PositionIngest(
        client: client,
        serviceReads: serviceReads,
        producer: positionsProducer,
        outbox: outbox,
        graph: graph,
        deletedUsers: keys.deletedUsers,
        logger: logger
    )
    let erasure = UserErasure(orders: orders, outbox: outbox, logger: logger)
    let dispatcher = Dispatcher(client: client, orders: orders, graph: graph, early: config.dispatchEarly, logger: logger)

    var parts = base.applicationParts(metrics: runtime.metrics)
    parts.services += [
        positionsProducer, serviceReads, HTTPClientService(client: http), keys,
        RepeatingTask("Writing drivers' latest positions", every: .seconds(1), logger: logger) { try await positions.flush() },
        base.collectingTombstones(of: "order_tombstones"),
        RepeatingTask("Dispatching", every: config.dispatchInterval, logger: logger) { try await dispatcher.round() },
        base.erasingDeletedUsers(group: config.erasureGroup, inboxName: UserErasure.consumer, keys: keys, erase: erasure.erase),
    ]
    base.refusingDeletedUsers(of: keys, in: &parts)
    if config.seeds, let token = config.authServiceToken {
        // Before the first request: the app has restaurants to show from the start.
        let seeder = RestaurantSeeder(client: client, outbox: outbox, http: http, authURL: config.authURL, serviceToken: token, logger: logger)
        parts.beforeServerStarts.append { try await seeder.seedIfEmpty(graph) }
    }
    parts.routePolicies = [
        RoutePolicy(pathPrefix: "/v1", maxBodySize: 256 << 10, timeout: config.standard.http.requestTimeout),
        RoutePolicy(pathPrefix: "/rest/v1", maxBodySize: 256 << 10, timeout: config.standard.http.requestTimeout),
    ]
    let dataTables = TrackingDataTables(client: client, restaurants: restaurants, orders: orders, logger: logger)
    let data = DataController(tables: dataTables.tables, functions: dataTables.functions, logger: logger) { token throws(AccessTokenError) in
        try await keys.verify(token)
    }
    logger.info("tracking starting", metadata: ["places": "\(graph.places.count)", "roads": "\(graph.edges.count)"])
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        let group = router.group("v1")
        RestaurantsController(restaurants: restaurants, keys: keys).addRoutes(to: group)
        OrdersController(orders: orders, positions: positions, keys: keys).addRoutes(to: group)
        DriversController(client: client, positions: positions, keys: keys, logger: logger).addRoutes(to: group)
        data.addRoutes(to: router)
    }
}
