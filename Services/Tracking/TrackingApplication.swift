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
import ServiceKit

/// Builds tracking: restaurants (seeded from the Helsinki fixture on an empty table), orders and
/// their state machine with the outbox relay of `tracking.orders`, the dispatcher, and drivers'
/// positions straight to `tracking.locations`.
/// - Throws: when a migration does not apply, Kafka refuses the topics, or the road graph cannot
///   be read.
func buildApplication(_ config: TrackingConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    try await prepareServiceStorage(
        schema: trackingSchema,
        migrations: try Migration.load(bundle: .module),
        database: config.database,
        events: config.events,
        topics: [TopicCatalog.trackingOrders, TopicCatalog.trackingLocations, TopicCatalog.trackingRestaurants],
        logger: logger
    )
    let graph = try RoadGraph.helsinki()

    let client = PostgresClient(configuration: config.database.client, backgroundLogger: logger)
    let producer = try KafkaProducer(configuration: config.events.producer(clientID: "tracking"), logger: logger)
    let relay = try OutboxRelay(schema: trackingSchema, client: client, producer: producer, configuration: config.events.outbox, logger: logger)
    let outbox = try Outbox(schema: trackingSchema, service: "tracking", relay: relay)
    var httpConfiguration = HTTPClient.Configuration()
    httpConfiguration.redirectConfiguration = .disallow
    httpConfiguration.timeout = .init(connect: .seconds(5), read: .seconds(30))
    let http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: httpConfiguration, backgroundActivityLogger: logger)
    let keys = KeySetCache(url: config.keys.url, issuer: config.keys.issuer, refreshInterval: .seconds(5), client: http, logger: logger)

    let restaurants = RestaurantStore(client: client, outbox: outbox, logger: logger)
    let orders = OrderStore(client: client, outbox: outbox, graph: graph, logger: logger)
    let serviceReads = PostgresClient(configuration: config.database.serviceSessions(maximumConnections: 4), backgroundLogger: logger)
    let positions = PositionIngest(client: client, serviceReads: serviceReads, producer: producer, graph: graph, logger: logger)
    let dispatcher = Dispatcher(client: client, orders: orders, graph: graph, early: config.dispatchEarly, logger: logger)

    var parts = ServiceApplicationParts(name: "tracking", http: config.http, logger: logger, metrics: runtime.metrics)
    parts.readiness = [.postgres(client), .kafka(producer)]
    parts.services = [
        client, serviceReads, producer, relay, HTTPClientService(client: http), keys,
        RepeatingTask("Writing drivers' latest positions", every: .seconds(1), logger: logger) { try await positions.flush() },
        RepeatingTask("Dispatching", every: config.dispatchInterval, logger: logger) { try await dispatcher.round() },
    ]
    if config.seeds, let token = config.authServiceToken {
        // Before the first request: the app has restaurants to show from the start.
        let seeder = RestaurantSeeder(client: client, http: http, authURL: config.authURL, serviceToken: token, logger: logger)
        parts.beforeServerStarts.append { try await seeder.seedIfEmpty(graph) }
    }
    parts.routePolicies = [
        RoutePolicy(pathPrefix: "/v1", maxBodySize: 256 << 10, timeout: config.http.requestTimeout),
        RoutePolicy(pathPrefix: "/rest/v1", maxBodySize: 256 << 10, timeout: config.http.requestTimeout),
    ]
    let dataTables = TrackingDataTables(client: client, restaurants: restaurants, orders: orders, logger: logger)
    let data = DataEndpoint(tables: dataTables.tables, functions: dataTables.functions, logger: logger) { token throws(AccessTokenError) in
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
