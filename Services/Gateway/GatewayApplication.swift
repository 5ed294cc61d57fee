import AsyncHTTPClient
import EventBus
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Kafka
import KeySetClient
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceKit
import ServiceLifecycle

/// Builds the gateway: the edge and reverse proxy in front of every client connection
/// (`EdgeProxyHandler`: CORS, token checks, rate limits, body limits, forwarding), and behind it
/// the router with ServiceKit's request ids, timeouts, problem responses and metrics, for the
/// gateway's own routes: the realtime endpoints with the event feed behind them, the console and
/// health.
func buildApplication(_ config: GatewayConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let client = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: keySetClientConfiguration(config),
        backgroundActivityLogger: logger
    )
    let addresses = ClientAddressResolver(trustedProxies: config.trustedProxies)
    let keys = KeySetCache(
        url: config.keySetURL,
        issuer: config.issuer,
        refreshInterval: config.keySetRefreshInterval,
        client: client,
        logger: logger
    )
    let pools = try UpstreamPools(config.routes, connectTimeout: config.connectTimeout, metrics: runtime.metrics.factory)
    let checks = EdgeChecks(routes: config.routes, keys: keys, addresses: addresses, anonKey: config.anonKey)
    let proxy = EdgeProxy(
        checks: checks,
        pools: pools.byGroup,
        cors: config.cors,
        requests: runtime.metrics.requests,
        metrics: runtime.metrics.factory,
        logger: logger,
        serverName: "gateway"
    )

    let hub = RealtimeHub(
        replayCapacity: config.realtime.replayEvents,
        replayAge: config.realtime.replayAge,
        metrics: RealtimeMetrics(factory: runtime.metrics.factory)
    )
    let orders = OrderDirectory()
    let changes = ChangeHub(windowCapacity: config.realtime.replayEvents, windowAge: config.realtime.replayAge, metrics: hub.metrics)
    let producer = try KafkaProducer(configuration: config.realtime.events.producer(clientID: "gateway-\(config.realtime.replica)"), logger: logger)
    let broadcasts = BroadcastRelay(producer: producer, hub: changes, replica: config.realtime.replica, logger: logger)
    let presence = PresenceRelay(
        producer: producer,
        hub: changes,
        replica: config.realtime.replica,
        logger: logger,
        heartbeat: config.realtime.presenceHeartbeat,
        expiry: config.realtime.presenceExpiry
    )
    presence.relayLeaves()
    let gate = RealtimeGate(keys: keys, orders: orders)
    // A deleted account's tokens are refused and its live connections closed as soon as the
    // deletion is read; a replica started later reads the last hour back before it is ready.
    let deletions = DeletedUsersFeed(
        events: config.realtime.events,
        name: "gateway-\(config.realtime.replica)",
        deletedUsers: keys.deletedUsers,
        logger: logger
    ) { [sessions = gate.sessions] user in
        sessions.close(user: user.lowercased)
    }
    let realtime = RealtimeController(
        hub: hub,
        changes: changes,
        broadcasts: broadcasts,
        presence: presence,
        anonKey: config.anonKey,
        gate: gate,
        settings: config.realtime,
        addresses: addresses,
        logger: logger
    )
    let console = ConsoleController(
        access: ConsoleAccess(keys: keys),
        backends: ConsoleBackends(
            client: client,
            authURL: config.authURL,
            trackingURL: config.routes.groups.first { $0.name == "tracking" }?.upstream,
            editRenderURL: config.routes.groups.first { $0.name == "edit_render" }?.upstream,
            notifyURL: config.routes.groups.first { $0.name == "notify" }?.upstream,
            brokers: config.realtime.events.brokers,
            deletedUsers: keys.deletedUsers,
            logger: logger
        ),
        realtime: realtime,
        addresses: addresses,
        assets: try ConsoleAssets(),
        logger: logger
    )
    let feed = EventFeed(
        events: config.realtime.events,
        replica: config.realtime.replica,
        hub: hub,
        changes: changes,
        broadcasts: broadcasts,
        presence: presence,
        orders: orders,
        logger: logger
    )

    var parts = ServiceApplicationParts(name: "gateway", http: config.http, logger: logger, metrics: runtime.metrics)
    // Stopped in reverse order: the key set's refreshing before the client it fetches with.
    let heartbeats = RepeatingTask("presence heartbeat", every: config.realtime.presenceHeartbeat, logger: logger) { await presence.beat() }
    let tokenWatch = RepeatingTask("realtime token watch", every: .seconds(1), logger: logger) {
        changes.endLapsedJoins(deletedUsers: keys.deletedUsers)
    }
    parts.services = [HTTPClientService(client: client), keys, pools, producer, feed, deletions, heartbeats, tokenWatch]
    parts.readiness = [feed.readiness, deletions.readiness]
    // The proxy reads each connection's bytes first, and opens the realtime WebSockets itself;
    // behind SwiftNIO's parser, the router's answers are counted, so a proxied request pipelined
    // after one waits for it. The router's channel is Hummingbird's upgrade channel, upgrading
    // nothing, for what it does that the plain one does not: it makes its request stream only
    // for a connection whose bytes reach it (the plain one makes it at once, and a connection
    // the edge served alone would leave it unfinished), and it answers another upgrade as a GET.
    let upgrades = RealtimeUpgrade(endpoints: realtime)
    let router = HTTP1WebSocketUpgradeChannel.Configuration(http1: .init(additionalChannelHandlers: [RoutedAnswerTracker()]))
    let upgradesNothing: UpgradeDecision = { _, _, _ in .dontUpgrade }
    parts.server = HTTPServerBuilder { responder in
        FrontedChannel(
            HTTP1WebSocketUpgradeChannel(responder: responder, configuration: router, shouldUpgrade: upgradesNothing),
            front: { router in [EdgeProxyHandler(proxy, upgrades: upgrades, router: router)] },
            behind: { [ParserErrorHandler()] }
        )
    }
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        router.add(middleware: CORSMiddleware(policy: config.cors))
        router.add(middleware: ProblemMiddleware<AppRequestContext>())
        realtime.addRoutes(to: router)
        console.addRoutes(to: router)
    }
}

/// Whether Hummingbird's upgrade channel upgrades a request.
private typealias UpgradeDecision =
    @Sendable (HTTPRequest, any Channel, Logger) throws -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>>

/// The client for auth's key set: connecting is bounded by `GATEWAY_CONNECT_TIMEOUT`, so a gateway
/// whose auth is down fails the fetch fast. (Proxied calls go over `UpstreamPool`s.)
private func keySetClientConfiguration(_ config: GatewayConfiguration) -> HTTPClient.Configuration {
    var configuration = HTTPClient.Configuration()
    configuration.timeout = .init(connect: .nanoseconds(config.connectTimeout.totalNanoseconds), read: .seconds(10))
    configuration.decompression = .disabled
    configuration.redirectConfiguration = .disallow
    return configuration
}

/// One connection pool per upstream URL (route groups of one service share it), closed when the
/// gateway stops.
struct UpstreamPools: Service {
    let byGroup: [String: UpstreamPool]

    init(_ routes: RouteTable, connectTimeout: Duration, metrics: any MetricsFactory) throws {
        var byURL: [URL: UpstreamPool] = [:]
        var byGroup: [String: UpstreamPool] = [:]
        for route in routes.groups {
            guard let url = route.upstream else { continue }
            if byURL[url] == nil { byURL[url] = try UpstreamPool(name: route.name, url: url, connectTimeout: connectTimeout, metrics: metrics) }
            byGroup[route.name] = byURL[url]
        }
        self.byGroup = byGroup
    }

    func run() async throws {
        try? await gracefulShutdown()
        for pool in byGroup.values { pool.closeParked() }
    }
}
