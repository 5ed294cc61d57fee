import Logging
import PostgresNIO

/// The application database of the local stack: one database, and for each service that owns a
/// schema, a login role `splash_<schema>` owning that schema, with `search_path` set to it.
package struct LocalDatabase: Sendable {
    package var name: String
    package var port: Int
    /// The server's address: loopback, or a test's own network namespace.
    package var host: String

    package init(name: String = "splash", port: Int, host: String = "127.0.0.1") {
        self.name = name
        self.port = port
        self.host = host
    }

    /// `postgres://` URL for `role` with `password`.
    package func url(role: String, password: String) -> String {
        "postgres://\(role):\(password)@\(host):\(port)/\(name)?sslmode=disable&application_name=\(role)"
    }

    /// Creates the database, roles and schemas that are missing and (re)sets each role's password.
    /// Safe to run on every start.
    /// - Parameter passwords: the password of each role, by role name.
    package func provision(superuserPassword: String?, services: [LocalService], passwords: [String: String], logger: Logger) async throws {
        try await PostgresCluster.withSuperuserConnection(port: port, password: superuserPassword, database: "postgres", logger: logger) {
            connection in
            let exists = try await connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger).collect().isEmpty == false
            if !exists {
                try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(Self.identifier(name))"), logger: logger)
                logger.info("created database \(name)")
            }
            for service in services {
                guard let role = service.role, let password = passwords[role] else { continue }
                let roleExists =
                    try await connection.query("SELECT 1 FROM pg_roles WHERE rolname = \(role)", logger: logger).collect().isEmpty == false
                // Utility statements take no bind parameters; the password is quoted as a literal.
                let verb = roleExists ? "ALTER" : "CREATE"
                try await connection.query(
                    PostgresQuery(unsafeSQL: "\(verb) ROLE \(Self.identifier(role)) LOGIN PASSWORD \(Self.literal(password))"),
                    logger: logger
                )
            }
        }
        try await PostgresCluster.withSuperuserConnection(port: port, password: superuserPassword, database: name, logger: logger) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "REVOKE ALL ON DATABASE \(Self.identifier(name)) FROM PUBLIC"), logger: logger)
            for service in services {
                guard let role = service.role, let schema = service.schema else { continue }
                try await connection.query(
                    PostgresQuery(unsafeSQL: "GRANT CONNECT, TEMPORARY ON DATABASE \(Self.identifier(name)) TO \(Self.identifier(role))"),
                    logger: logger
                )
                try await connection.query(
                    PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(Self.identifier(schema)) AUTHORIZATION \(Self.identifier(role))"),
                    logger: logger
                )
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL:
                            "ALTER ROLE \(Self.identifier(role)) IN DATABASE \(Self.identifier(name)) SET search_path = \(Self.identifier(schema))"
                    ),
                    logger: logger
                )
            }
        }
    }

    /// `"name"`, with embedded quotes doubled.
    static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `'text'`, with embedded quotes doubled (standard_conforming_strings is on).
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
