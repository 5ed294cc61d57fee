import Hummingbird
import ServiceKit

extension RateLimiter {
    /// Counts `request` against the limit of the client that sent it (its address as
    /// `addresses` resolves it: the peer, or the gateway's `X-Forwarded-For`).
    /// - Throws: `AuthError.overRequestRateLimit` once the client is over it.
    func admit(_ request: Request, _ context: AppRequestContext, addresses: ClientAddressResolver) throws(AuthError) {
        let client = addresses.resolve(peer: context.remoteAddress, forwardedFor: request.headers[.forwardedFor])
        if let wait = acquire(client) { throw .overRequestRateLimit(retryAfterSeconds: wait) }
    }
}
