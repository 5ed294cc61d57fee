import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// Everything a service's `buildApplication` hands to `makeServiceApplication`.
package struct ServiceApplicationParts: Sendable {
    /// The service's name, used as the logger label and the `Server` header.
    package var name: String
    package var http: HTTPServerSettings
    package var logger: Logger
    package var metrics: ServiceMetrics
    /// Dependencies `/readyz` probes.
    package var readiness: [ReadinessCheck] = []
    /// Background work that runs beside the HTTP server (database pool, consumers, relays), started
    /// in order and shut down in reverse order after the server has drained.
    package var services: [any Service] = []
    /// Work that must finish before the server accepts requests (migrations); runs once `services`
    /// are up.
    package var beforeServerStarts: [@Sendable () async throws -> Void] = []
    /// Body-size and timeout limits for route groups that differ from the defaults.
    package var routePolicies: [RoutePolicy] = []
    /// The HTTP channel the server speaks: HTTP/1.1, or HTTP/1.1 with a WebSocket upgrade (the
    /// gateway's realtime endpoint).
    package var server: HTTPServerBuilder = .http1()
    /// Called with the listening channel once the server is bound (tests read the port from it).
    package var onServerRunning: @Sendable (any Channel) async -> Void = { _ in }

    package init(name: String, http: HTTPServerSettings, logger: Logger, metrics: ServiceMetrics) {
        self.name = name
        self.http = http
        self.logger = logger
        self.metrics = metrics
    }
}

/// The application type every Splash service builds.
package typealias ServiceApplication<Context: ServiceRequestContext> = Application<ServiceResponder<RouterResponder<Context>>>

/// Builds a service's application: its routes behind ServiceKit's edge (request ids, route
/// policies, problem responses, access log, metrics), the health routes, and its background services.
///
/// - Parameters:
///   - context: the request context type of the service's routes.
///   - addRoutes: registers the service's routes on the router.
/// - Throws: whatever `addRoutes` throws.
package func makeServiceApplication<Context: ServiceRequestContext>(
    _ parts: ServiceApplicationParts,
    context: Context.Type,
    addRoutes: (Router<Context>) throws -> Void
) rethrows -> ServiceApplication<Context> {
    let router = Router(context: Context.self)
    router.add(middleware: ProblemMiddleware<Context>())
    HealthRoutes(checks: parts.readiness, metrics: parts.metrics).addRoutes(to: router)
    try addRoutes(router)

    let responder = ServiceResponder(
        base: router.buildResponder(),
        policies: RoutePolicies(default: parts.http, overrides: parts.routePolicies),
        metrics: parts.metrics
    )
    var application = Application(
        responder: responder,
        server: parts.server,
        configuration: .init(address: .hostname(parts.http.host, port: parts.http.port), serverName: parts.name),
        services: startingInOrder(parts.services).services,
        onServerRunning: parts.onServerRunning,
        logger: parts.logger
    )
    for process in parts.beforeServerStarts {
        application.beforeServerStarts(perform: process)
    }
    return application
}
