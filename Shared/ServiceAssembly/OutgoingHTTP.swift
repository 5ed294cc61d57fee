import AsyncHTTPClient
import KeySetClient
import Logging
import NIOPosix

extension HTTPClient {
    /// The client a service calls other services with (auth's key set, photo-catalog): pooled, no
    /// redirect followed (a credential goes only where it was meant to), 5 s to connect and 30 s to
    /// read. Run it as a service (`HTTPClientService`) so it shuts down after its users.
    package static func standard(logger: Logger) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration, backgroundActivityLogger: logger)
    }
}
