import Foundation
import NIOSSL
import PostgresNIO
import ServiceKit

/// How a service reaches its Postgres database.
/// Each variable is described in docs/configuration.md.
package struct DatabaseSettings: Sendable {
    package var client: PostgresClient.Configuration

    package init(client: PostgresClient.Configuration) {
        self.client = client
    }

    /// A pool whose sessions act for the service itself (`app.service` on from the start, as
    /// `withServiceTransaction` sets it per transaction): for a hot path's reads that row-level
    /// security would otherwise cost a transaction of four round trips each.
    package func serviceSessions(maximumConnections: Int) -> PostgresClient.Configuration {
        var configuration = client
        configuration.options.maximumConnections = maximumConnections
        configuration.options.additionalStartupParameters.append(("options", "-c app.service=on"))
        return configuration
    }

    package init(from reader: ConfigurationReader) throws(ConfigurationError) {
        var client = try reader.value(
            "DATABASE_URL",
            expected: "a URL like postgres://user:password@host:5432/database?sslmode=disable",
            secret: true,
            parse: { try? PostgresURL.parse($0) }
        )
        client.options.maximumConnections = try reader.integer("DATABASE_POOL_SIZE", default: 10, in: 1...500)
        self.client = client
    }
}

/// Parses `postgres://` (or `postgresql://`) URLs into PostgresNIO client configurations.
package enum PostgresURL {
    package enum ParseError: Error, Equatable {
        case notAPostgresURL
        case missingUser
        case unsupportedSSLMode(String)
    }

    /// The configuration `url` describes; `sslmode` follows libpq (`prefer` when absent).
    package static func parse(_ url: String) throws(ParseError) -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql",
            let host = components.host, !host.isEmpty
        else { throw .notAPostgresURL }
        guard let user = components.user, !user.isEmpty else { throw .missingUser }

        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "prefer" {
        case "disable":
            tls = .disable
        case "prefer", "allow":
            tls = .prefer(unverified())
        case "require":
            tls = .require(unverified())
        case "verify-full", "verify-ca":
            tls = .require(.makeClientConfiguration())
        case let other:
            throw .unsupportedSSLMode(other)
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: user,
            password: components.password,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        if let applicationName = query["application_name"], !applicationName.isEmpty {
            configuration.options.additionalStartupParameters.append(("application_name", applicationName))
        }
        return configuration
    }

    /// TLS that encrypts without verifying the server's certificate (libpq's `prefer`/`require`).
    private static func unverified() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }
}

extension ReadinessCheck {
    /// Ready when Postgres answers `SELECT 1`.
    package static func postgres(_ client: PostgresClient) -> ReadinessCheck {
        ReadinessCheck("postgres") {
            try await client.query("SELECT 1")
        }
    }
}
