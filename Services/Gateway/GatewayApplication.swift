import AsyncHTTPClient
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceKit
import ServiceLifecycle

/// Builds the gateway: the edge (CORS, token checks, rate limits) in front of the reverse proxy,
/// with ServiceKit's request ids, body limits, timeouts, problem responses and metrics around it.
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
        proxy: ReverseProxy(client: client, addresses: addresses)
    )

    var parts = ServiceApplicationParts(name: "gateway", http: config.http, logger: logger, metrics: runtime.metrics)
    parts.services = [HTTPClientService(client: client)]
    parts.routePolicies = config.routes.groups.flatMap(\.routePolicies)
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        router.add(middleware: CORSMiddleware(policy: config.cors))
        router.add(middleware: edge)
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

/// Shuts the HTTP client down after the server has drained.
struct HTTPClientService: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
