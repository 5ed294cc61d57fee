/// The HTTP server settings every service shares.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `HTTP_HOST` | `127.0.0.1` | address to bind (`0.0.0.0` in containers) |
/// | `HTTP_PORT` | per service | port to bind |
/// | `HTTP_REQUEST_TIMEOUT` | `30s` | longest a handler may take before a 503 |
/// | `HTTP_MAX_BODY_SIZE` | `1MiB` | largest request body outside routes with their own limit |
/// | `SHUTDOWN_GRACE` | `10s` | how long in-flight work may finish after SIGTERM |
package struct HTTPServerSettings: Sendable, Equatable {
    package var host: String
    package var port: Int
    package var requestTimeout: Duration
    package var maxBodySize: Int
    package var shutdownGrace: Duration

    package init(
        host: String = "127.0.0.1",
        port: Int,
        requestTimeout: Duration = .seconds(30),
        maxBodySize: Int = 1 << 20,
        shutdownGrace: Duration = .seconds(10)
    ) {
        self.host = host
        self.port = port
        self.requestTimeout = requestTimeout
        self.maxBodySize = maxBodySize
        self.shutdownGrace = shutdownGrace
    }

    /// Reads the `HTTP_*` and `SHUTDOWN_GRACE` variables; `defaultPort` is the service's own port.
    package init(from reader: ConfigurationReader, defaultPort: Int) throws(ConfigurationError) {
        self.init(
            host: try reader.string("HTTP_HOST", default: "127.0.0.1"),
            port: try reader.port("HTTP_PORT", default: defaultPort, allowEphemeral: true),
            requestTimeout: try reader.duration("HTTP_REQUEST_TIMEOUT", default: .seconds(30), minimum: .milliseconds(1)),
            maxBodySize: try reader.byteCount("HTTP_MAX_BODY_SIZE", default: 1 << 20),
            shutdownGrace: try reader.duration("SHUTDOWN_GRACE", default: .seconds(10))
        )
    }
}
