import HTTPTypes
import Hummingbird
import Identity
import KeySetClient
import NIOCore
import ServiceKit

/// The gateway's checks on a routed request: the route group that serves it, the user its bearer
/// token names when the group asks for one, and the caller's rate-limit bucket. Shared by the
/// router's `EdgeMiddleware` and the connection-level `DirectProxyHandler`.
struct EdgeChecks: Sendable {
    let routes: RouteTable
    let keys: KeySetCache
    let limiters: [String: RateLimiter]
    let addresses: ClientAddressResolver
    /// `GATEWAY_ANON_KEY`: the `apikey` the Supabase groups (`.storage`, `.data`) require; any when `nil`.
    let anonKey: String?

    init(routes: RouteTable, keys: KeySetCache, addresses: ClientAddressResolver, anonKey: String? = nil) {
        self.routes = routes
        self.keys = keys
        self.limiters = Dictionary(uniqueKeysWithValues: routes.groups.map { ($0.name, RateLimiter($0.rateLimit)) })
        self.addresses = addresses
        self.anonKey = anonKey
    }

    /// - Throws: 401 `invalid-api-key` when the anon key is set and the request's `apikey` is not it.
    private func checkAPIKey(_ headers: HTTPFields, for group: RouteGroup) throws(Problem) {
        guard let anonKey, group.access == .storage || group.access == .data, headers[.apiKey] != anonKey else { return }
        throw Problem(status: .unauthorized, type: "invalid-api-key", title: "Invalid API key",
                      detail: "Invalid API key: send the project's anon key as `apikey`.")
    }

    /// The user id of a valid bearer token; `nil` for an anonymous call the group allows.
    /// - Throws: `TokenProblem`: 401 for a missing token the group requires or an invalid one, 503
    ///   when auth's keys cannot be had.
    func authenticate(_ headers: HTTPFields, method: HTTPRequest.Method, path: String, for group: RouteGroup) async throws -> String? {
        guard group.access != .passthrough else { return nil }
        try checkAPIKey(headers, for: group)
        var bearer = headers.bearerToken
        if group.access == .storage || group.access == .data, let key = headers[.apiKey], bearer == key {
            bearer = nil
        }
        guard let token = bearer else {
            switch group.access {
            case .user: throw TokenProblem.missing
            case .storage where !EdgeAccess.isAnonymousStorageDownload(method: method, path: path): throw TokenProblem.missing
            default: return nil
            }
        }
        do {
            return try await keys.verify(token).subject
        } catch {
            throw TokenProblem.refused(error)
        }
    }

    /// What `authenticate` would accept, decided without waiting: `nil` when that takes a key-set
    /// fetch or ends in a 401 (both for the router's path to handle).
    func acceptedWithoutWaiting(bearer: @autoclosure () -> String?, for group: RouteGroup) -> String?? {
        guard group.access != .passthrough else { return .some(nil) }
        // The anon key is checked on the router's path, which has the headers.
        if anonKey != nil, group.access == .storage || group.access == .data { return nil }
        // Without a token only an open group's call is settled here; `.storage`'s anonymous
        // downloads take the router's path, which reads the method and the `apikey`.
        guard let token = bearer() else { return group.access == .optionalUser || group.access == .data ? .some(nil) : nil }
        return keys.verifyWithoutFetching(token).map { .some($0.subject) }
    }

    /// A token from the caller's bucket of `group` (the user's, or the client address's when
    /// anonymous), and the limit it was taken against.
    /// - Parameter peerIP: the client connection's address as `ClientAddressResolver.text(of:)` gives it.
    func takeRateLimit(for group: RouteGroup, user: String?, peerIP: String, forwardedFor: String?) -> (decision: RateLimitDecision, limit: RateLimit) {
        let caller = user.map { "user:\($0)" } ?? "ip:\(addresses.resolve(peerIP: peerIP, forwardedFor: forwardedFor))"
        let limiter = limiters[group.name]!
        return (limiter.take(caller), limiter.limit)
    }
}

/// The gateway's work for every routed request the direct path leaves to the router: find the
/// route group, check the bearer token the group asks for, take a token from the caller's
/// rate-limit bucket, and forward. Requests no group covers go on to the router (health, metrics,
/// realtime) or its 404.
struct EdgeMiddleware<Context: ServiceRequestContext>: RouterMiddleware {
    let checks: EdgeChecks
    let proxy: ReverseProxy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let group = checks.routes.group(for: request.uri.path) else {
            return try await next(request, context)
        }
        context.coreContext.endpointPath.value = group.route
        let user = try await checks.authenticate(request.headers, method: request.method, path: request.uri.path, for: group)
        let (decision, limit) = checks.takeRateLimit(
            for: group, user: user, peerIP: ClientAddressResolver.text(of: context.remoteAddress), forwardedFor: request.headers[.xForwardedFor]
        )
        guard decision.allowed else {
            throw GatewayProblem.rateLimited(
                decision, limit: limit, title: "Too many requests",
                detail: "Slow down: at most \(limit.count) requests per \(DurationFormat.format(limit.window)) to \(group.name)."
            )
        }
        var response = try await proxy.forward(request, context: context, to: group)
        response.headers.append(contentsOf: decision.headers(limit: limit, includeRetryAfter: false))
        return response
    }
}
