import AsyncHTTPClient
import Hummingbird
import HummingbirdWebSocket
import KeySetClient
import Logging
import NIOCore
import NIOPosix
import ServiceKit
import ServiceLifecycle

/// Builds the gateway: the edge (CORS, token checks, rate limits) in front of the reverse proxy,
/// with ServiceKit's request ids, body limits, timeouts, problem responses and metrics around it;
/// and the realtime endpoints with the event feed behind them.
func buildApplication(_ config: GatewayConfiguration, runtime: ServiceRuntime) async throws -> ServiceApplication<AppRequestContext> {
    let logger = runtime.logger
    let client = HTTPClient(
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        configuration: upstreamClientConfiguration(config),
        backgroundActivityLogger: logger
    )
    let addresses = ClientAddressResolver(trustedProxies: config.trustedProxies)
    let keys = KeySetCache(url: config.keySetURL, issuer: config.issuer, refreshInterval: config.keySetRefreshInterval, client: client, logger: logger)
    let edge = EdgeMiddleware<AppRequestContext>(
        routes: config.routes, keys: keys, addresses: addresses,
        proxy: ReverseProxy(client: client, addresses: addresses, metrics: runtime.metrics.factory)
    )

    let hub = RealtimeHub(
        replayCapacity: config.realtime.replayEvents, replayAge: config.realtime.replayAge,
        metrics: RealtimeMetrics(factory: runtime.metrics.factory)
    )
    let orders = OrderDirectory()
    let realtime = RealtimeEndpoints(
        hub: hub, gate: RealtimeGate(keys: keys, orders: orders), settings: config.realtime, addresses: addresses, logger: logger
    )
    let feed = EventFeed(events: config.realtime.events, replica: config.realtime.replica, hub: hub, orders: orders, logger: logger)

    var parts = ServiceApplicationParts(name: "gateway", http: config.http, logger: logger, metrics: runtime.metrics)
    parts.services = [HTTPClientService(client: client), feed]
    parts.readiness = [feed.readiness]
    parts.routePolicies = config.routes.groups.flatMap(\.routePolicies)
    parts.server = .http1WebSocketUpgrade(webSocketRouter: realtime.webSocketRouter(), configuration: realtime.webSocketConfiguration)
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        router.add(middleware: CORSMiddleware(policy: config.cors))
        router.add(middleware: edge)
        realtime.addRoutes(to: router)
    }
}

/// Pooled connections to the upstreams. Connecting is bounded by `GATEWAY_CONNECT_TIMEOUT` so that
/// a service that is down fails fast; answering is bounded per route group.
private func upstreamClientConfiguration(_ config: GatewayConfiguration) -> HTTPClient.Configuration {
    var configuration = HTTPClient.Configuration()
    configuration.timeout = .init(connect: .nanoseconds(config.connectTimeout.totalNanoseconds), read: .seconds(60))
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
    configuration.decompression = .disabled
    configuration.redirectConfiguration = .disallow
    configuration.httpVersion = .http1Only
    return configuration
}
