import Hummingbird
import NIOCore

/// What ServiceKit's middleware needs from a request context.
///
/// Services use `AppRequestContext`, or their own context conforming to this protocol when they need
/// more per-request state; authenticated route groups derive a child context with a non-optional user.
package protocol ServiceRequestContext: RequestContext where Source == ApplicationRequestContextSource {
    /// The request id: the caller's `X-Request-Id` when well-formed, otherwise generated.
    var requestID: String { get set }
    /// The largest body this request may carry; set from the route's policy.
    var maxUploadSize: Int { get set }
    /// The address of the peer that opened the connection (a proxy, when there is one).
    var remoteAddress: SocketAddress? { get }
    /// The connection the request came on (long-lived responses close it under a stuck client).
    var channel: any Channel { get }
}

/// The request context of a Splash service.
package struct AppRequestContext: ServiceRequestContext {
    package var coreContext: CoreRequestContextStorage
    package var requestID: String
    package var maxUploadSize: Int
    package let remoteAddress: SocketAddress?
    package let channel: any Channel

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.maxUploadSize = 1 << 20
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }
}
