import HTTPTypes
import Identity
import KeySetClient
import ServiceKit

/// The gateway's checks on a proxied request: the user its bearer token names when the route
/// group asks for one, the anon key of the Supabase groups, and the caller's rate-limit bucket.
struct EdgeChecks: Sendable {
    let routes: RouteTable
    let keys: KeySetCache
    let addresses: ClientAddressResolver
    /// `GATEWAY_ANON_KEY`: the `apikey` the Supabase groups (`.storage`, `.data`) require; any when `nil`.
    let anonKey: String?

    init(routes: RouteTable, keys: KeySetCache, addresses: ClientAddressResolver, anonKey: String? = nil) {
        self.routes = routes
        self.keys = keys
        self.addresses = addresses
        self.anonKey = anonKey
    }

    /// What the edge makes of a request's credentials.
    enum Admission: Sendable {
        /// Let through, as the user the token names (`nil`: anonymously, as the group allows).
        case user(String?)
        /// A 401 (or a 503 when tokens cannot be checked).
        case refused(Problem)
        /// The token needs the key set fetched first: `verified(_:)` settles it afterwards.
        case needsKeys(token: String)
    }

    /// Settles a request to `group` from its `Authorization` and `apikey` fields without waiting,
    /// unless the token's key must be fetched. `apiKey` is read for the Supabase groups alone.
    func admit(
        authorization: String?,
        apiKey readAPIKey: @autoclosure () -> String?,
        method: HTTPRequest.Method,
        path: String,
        for group: RouteGroup
    ) -> Admission {
        guard group.access != .passthrough else { return .user(nil) }
        let supabase = group.access == .storage || group.access == .data
        let apiKey = supabase ? readAPIKey() : nil
        if supabase, let anonKey, apiKey != anonKey {
            return .refused(
                Problem(
                    status: .unauthorized,
                    type: "invalid-api-key",
                    title: "Invalid API key",
                    detail: "Invalid API key: send the project's anon key as `apikey`."
                )
            )
        }
        if group.access == .storage, EdgeAccess.isSignedStorageUpload(method: method, path: path) { return .user(nil) }
        var bearer = HTTPFields.bearerToken(in: authorization)
        // A Supabase client sends its anonymous key as a bearer before sign-in.
        if supabase, let apiKey, bearer == apiKey { bearer = nil }
        guard let token = bearer else {
            switch group.access {
            case .user: return .refused(TokenProblem.missing)
            case .storage where !EdgeAccess.isAnonymousStorageCall(method: method, path: path): return .refused(TokenProblem.missing)
            default: return .user(nil)
            }
        }
        if let claims = keys.verifyWithoutFetching(token) { return .user(claims.subject) }
        return .needsKeys(token: token)
    }

    /// A token from the caller's bucket of `group` (the user's, or the client address's when
    /// anonymous), and the limit it was taken against.
    /// - Parameter peerIP: the client connection's address as `ClientAddressResolver.text(of:)` gives it.
    func takeRateLimit(for group: RouteGroup, user: String?, peerIP: String, forwardedFor: String?) -> (decision: RateLimitDecision, limit: RateLimit)
    {
        let caller = user.map { "user:\($0)" } ?? "ip:\(addresses.resolve(peerIP: peerIP, forwardedFor: forwardedFor))"
        let limiter = group.limiter
        return (limiter.take(caller), limiter.limit)
    }

    /// The 429 for a caller over `group`'s limit.
    static func rateLimited(_ decision: RateLimitDecision, limit: RateLimit, group: RouteGroup) -> Problem {
        GatewayProblem.rateLimited(
            decision,
            limit: limit,
            title: "Too many requests",
            detail: "Slow down: at most \(limit.count) requests per \(DurationFormat.format(limit.window)) to \(group.name)."
        )
    }
}
