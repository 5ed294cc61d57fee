import HTTPTypes
import Hummingbird
import Identity
import KeySetClient
import ServiceKit

/// The gateway's work for every routed request: find the route group, check the bearer token
/// the group asks for, take a token from the caller's rate-limit bucket, and forward. Requests no
/// group covers go on to the router (health, metrics, realtime) or its 404.
struct EdgeMiddleware<Context: ServiceRequestContext>: RouterMiddleware {
    let routes: RouteTable
    let keys: KeySetCache
    let limiters: [String: RateLimiter]
    let addresses: ClientAddressResolver
    let proxy: ReverseProxy

    init(routes: RouteTable, keys: KeySetCache, addresses: ClientAddressResolver, proxy: ReverseProxy) {
        self.routes = routes
        self.keys = keys
        self.limiters = Dictionary(uniqueKeysWithValues: routes.groups.map { ($0.name, RateLimiter($0.rateLimit)) })
        self.addresses = addresses
        self.proxy = proxy
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let group = routes.group(for: request.uri.path) else {
            return try await next(request, context)
        }
        context.coreContext.endpointPath.value = "\(group.pathPrefixes[0])/**"
        let user = try await authenticate(request, for: group)
        let caller = user.map { "user:\($0)" } ?? "ip:\(addresses.resolve(peer: context.remoteAddress, forwardedFor: request.headers[.xForwardedFor]))"
        let limiter = limiters[group.name]!
        let decision = limiter.take(caller)
        guard decision.allowed else {
            throw GatewayProblem.rateLimited(
                decision, limit: limiter.limit, title: "Too many requests",
                detail: "Slow down: at most \(limiter.limit.count) requests per \(DurationFormat.format(limiter.limit.window)) to \(group.name)."
            )
        }
        var response = try await proxy.forward(request, context: context, to: group)
        response.headers.append(contentsOf: decision.headers(limit: limiter.limit, includeRetryAfter: false))
        return response
    }

    /// The user id of a valid bearer token; `nil` for an anonymous call the group allows.
    private func authenticate(_ request: Request, for group: RouteGroup) async throws -> String? {
        guard group.access != .passthrough else { return nil }
        guard let token = request.headers.bearerToken else {
            if group.access == .user { throw TokenProblem.missing }
            return nil
        }
        do {
            let claims = try await keys.verify(token)
            return claims.subject
        } catch {
            throw TokenProblem.invalid(error)
        }
    }
}
