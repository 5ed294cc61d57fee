/// The HTTP server settings every service shares.
/// Each variable is described in docs/configuration.md.
package struct HTTPServerSettings: Sendable, Equatable {
    package var host: String
    package var port: Int
    package var requestTimeout: Duration
    package var maxBodySize: Int
    package var shutdownGrace: Duration
    /// `nil`: one per core.
    package var eventLoops: Int?

    package init(
        host: String = "127.0.0.1",
        port: Int,
        requestTimeout: Duration = .seconds(30),
        maxBodySize: Int = 1 << 20,
        shutdownGrace: Duration = .seconds(10),
        eventLoops: Int? = nil
    ) {
        self.host = host
        self.port = port
        self.requestTimeout = requestTimeout
        self.maxBodySize = maxBodySize
        self.shutdownGrace = shutdownGrace
        self.eventLoops = eventLoops
    }

    /// Reads the `HTTP_*`, `SHUTDOWN_GRACE` and `EVENT_LOOPS` variables; `defaultPort` is the service's own port.
    package init(from reader: ConfigurationReader, defaultPort: Int) throws(ConfigurationError) {
        self.init(
            host: try reader.string("HTTP_HOST", default: "127.0.0.1"),
            port: try reader.port("HTTP_PORT", default: defaultPort, allowEphemeral: true),
            requestTimeout: try reader.duration("HTTP_REQUEST_TIMEOUT", default: .seconds(30), minimum: .milliseconds(1)),
            maxBodySize: try reader.byteCount("HTTP_MAX_BODY_SIZE", default: 1 << 20),
            shutdownGrace: try reader.duration("SHUTDOWN_GRACE", default: .seconds(10)),
            eventLoops: try reader.optionalInteger("EVENT_LOOPS", in: 1...256)
        )
    }
}
