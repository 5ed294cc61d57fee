import Hummingbird

/// What ServiceKit's middleware needs from a request context.
///
/// Services use `AppRequestContext`, or their own context conforming to this protocol when they need
/// more per-request state; authenticated route groups derive a child context with a non-optional user.
package protocol ServiceRequestContext: RequestContext where Source == ApplicationRequestContextSource {
    /// The request id: the caller's `X-Request-Id` when well-formed, otherwise generated.
    var requestID: String { get set }
    /// The largest body this request may carry; set from the route's policy.
    var maxUploadSize: Int { get set }
}

/// The request context of a Splash service.
package struct AppRequestContext: ServiceRequestContext {
    package var coreContext: CoreRequestContextStorage
    package var requestID: String
    package var maxUploadSize: Int

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.requestID = ""
        self.maxUploadSize = 1 << 20
    }
}
