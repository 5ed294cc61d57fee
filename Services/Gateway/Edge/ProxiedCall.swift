import HTTPEdge
import NIOCore
import ServiceKit

/// One call the gateway proxies to a route group's service: the request, its group, and what the
/// answers to it carry. Made as its head is read; the client connection's `EdgeStateMachine`
/// holds it while the call is in progress and gives it back in the actions that concern it.
final class ProxiedCall: EdgeCall {
    let request: ClientRequest
    let group: RouteGroup
    let requestID: String
    let start = ContinuousClock.now
    /// The `Origin` a browser sent, read only where it can matter: for a preflight (answered CORS
    /// on or off), and while CORS is on.
    let origin: String?
    /// The `Origin` the answer's CORS fields are written for (CORS on).
    let corsOrigin: String?
    /// The service's connections, once the call is admitted.
    var pool: UpstreamPool?
    /// The rate limit's answer to the call, for the `RateLimit-*` fields of the answer.
    var rateLimit: (decision: RateLimitDecision, limit: RateLimit)?
    /// The client's `X-Forwarded-For`, read for the rate limit and again for the call.
    lazy var forwardedFor = request.head.combined(.xForwardedFor)

    init(_ request: ClientRequest, group: RouteGroup, cors: CORSPolicy) {
        self.request = request
        self.group = group
        self.requestID = RequestIDGenerator.id(requested: request.head.combined(.xRequestID))
        self.origin = request.method == .options || cors.isEnabled ? request.head.combined(.origin) : nil
        self.corsOrigin = cors.isEnabled ? origin : nil
    }

    var maxBodySize: Int { group.maxBodySize }
    var timeout: TimeAmount { group.edgeTimeout }
}
