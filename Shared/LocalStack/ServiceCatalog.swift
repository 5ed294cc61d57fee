/// A Splash service as the local stack runs it: its executable, its port and the Postgres schema
/// (and so role) it owns.
package struct LocalService: Sendable, Equatable {
    package var executable: String
    package var port: Int
    /// The schema the service owns; `nil` for the stateless gateway.
    package var schema: String?
    /// Service-specific settings for `splash up`, beside the common ones every service gets.
    package var environment: [String: String]

    package init(_ executable: String, port: Int, schema: String?, environment: [String: String] = [:]) {
        self.executable = executable
        self.port = port
        self.schema = schema
        self.environment = environment
    }

    /// The Postgres role the service connects as: `splash_<schema>`.
    package var role: String? {
        schema.map { "splash_\($0)" }
    }
}

/// The services (docs/architecture.md) with their local ports. `splash up` starts those whose executable
/// has been built; `splash postgres` creates a schema and a role for each one that owns a schema.
package enum ServiceCatalog {
    package static let all: [LocalService] = [
        // The gateway reaches auth over loopback: its X-Forwarded-For names the client.
        LocalService("auth", port: 8081, schema: "auth", environment: ["AUTH_TRUSTED_PROXIES": "127.0.0.1/32"]),
        LocalService("photo-catalog", port: 8082, schema: "catalog"),
        // Locally the fixture photos are served by the gateway on loopback: allowed as sources.
        LocalService(
            "edit-render",
            port: 8083,
            schema: "render",
            environment: [
                "RENDER_SOURCE_HOSTS": "images.unsplash.com,plus.unsplash.com,localhost,127.0.0.1",
                "RENDER_ALLOW_PRIVATE_SOURCES": "true",
            ]
        ),
        LocalService("social", port: 8084, schema: "social"),
        LocalService("tracking", port: 8085, schema: "tracking"),
        // Without an APNs key, notifications go to the sink the console shows.
        LocalService("notify", port: 8086, schema: "notify"),
        // The gateway starts last: it fronts the others.
        LocalService(
            "gateway",
            port: 8080,
            schema: nil,
            environment: [
                "GATEWAY_AUTH_URL": "http://127.0.0.1:8081",
                "GATEWAY_PHOTO_CATALOG_URL": "http://127.0.0.1:8082",
                "GATEWAY_EDIT_RENDER_URL": "http://127.0.0.1:8083",
                "GATEWAY_SOCIAL_URL": "http://127.0.0.1:8084",
                "GATEWAY_TRACKING_URL": "http://127.0.0.1:8085",
                "GATEWAY_NOTIFY_URL": "http://127.0.0.1:8086",
            ]
        ),
    ]

    package static func service(named executable: String) -> LocalService? {
        all.first { $0.executable == executable }
    }
}
