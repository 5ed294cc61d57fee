import HTTPEdge
import HTTPTypes
import ServiceKit

/// The checks a proxied call passes before it goes to its service, in order: a CORS preflight is
/// answered at once, then the token (`EdgeChecks`), the caller's rate limit and the service's pool.
extension EdgeProxy {
    /// What the checks made of a call.
    enum Verdict {
        /// A CORS preflight, answered with these fields.
        case preflight(HTTPFields)
        case refused(Problem)
        /// Its rate limit and pool are set on it: it goes to its service.
        case admitted
        /// The token needs the key set fetched first; `verdict(on:_:peerIP:)` settles it after.
        case needsKeys(token: String)
    }

    /// Checks `call` from the client at `peerIP` without waiting, unless its token's key must be
    /// fetched.
    func check(_ call: ProxiedCall, peerIP: String) -> Verdict {
        let request = call.request
        if let origin = call.origin,
            CORSPolicy.isPreflight(method: request.method, origin: origin, requestMethod: request.head.combined(.accessControlRequestMethod))
        {
            switch cors.preflight(origin: origin, requestHeaders: request.head.combined(.accessControlRequestHeaders)) {
            case .success(let fields): return .preflight(fields)
            case .failure(let problem): return .refused(problem)
            }
        }
        let admission = checks.admit(
            authorization: request.head.combined(.authorization),
            apiKey: request.head.combined(.apiKey),
            method: request.method,
            path: request.path,
            for: call.group
        )
        return verdict(on: call, admission, peerIP: peerIP)
    }

    /// The verdict on `call` once its token is settled: a rate limit taken from the caller's
    /// bucket, and the pool of its service.
    func verdict(on call: ProxiedCall, _ admission: EdgeChecks.Admission, peerIP: String) -> Verdict {
        switch admission {
        case .refused(let problem):
            return .refused(problem)
        case .needsKeys(let token):
            return .needsKeys(token: token)
        case .user(let user):
            let group = call.group
            let (decision, limit) = checks.takeRateLimit(for: group, user: user, peerIP: peerIP, forwardedFor: call.forwardedFor)
            guard decision.allowed else { return .refused(EdgeChecks.rateLimited(decision, limit: limit, group: group)) }
            call.rateLimit = (decision, limit)
            guard let pool = pools[group.name] else { return .refused(GatewayProblem.notConfigured(group.name)) }
            call.pool = pool
            return .admitted
        }
    }
}
