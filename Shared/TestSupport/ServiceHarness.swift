import Foundation
import Hummingbird
import Logging
import ServiceKit

/// One service under test, built in-process from its configuration as its `main.swift` builds it
/// and served on a free loopback port: with a database of its own reached as the role that owns
/// its schema alone (so row-level security applies as in production), the test Kafka cluster,
/// and auth's keys where test tokens are signed. Each service's harness is a thin use of it.
package struct ServiceHarness: Sendable {
    /// The issuer the services under test expect and test tokens carry.
    package static let issuer = "http://auth.test/auth/v1"

    /// The service's database, `nil` for one that owns no schema.
    package let database: TestDatabase?
    /// Its URL as the service's role, for another replica or process.
    package let databaseURL: String?
    /// The login role the service connects as, owner of its schema alone; its password is
    /// `rolePassword(schema)`.
    package let databaseRole: String?
    /// The whole environment the service is configured from.
    package let environment: [String: String]

    /// What a service reads from the environment in every test alike.
    package struct Needs: Sendable {
        /// The schema it owns; its database role owns it alone.
        package var schema: String?
        package var databasePoolSize = 8
        /// It publishes or consumes on Kafka: the test cluster, whose topics exist already, read
        /// without waiting long, and outboxes polled often.
        package var events = true
        /// Its key-set settings' prefix (`SOCIAL` for `SOCIAL_JWKS_URL`, `SOCIAL_JWT_ISSUER`) and
        /// where the keys test tokens are signed with are published.
        package var keys: (prefix: String, url: String)?

        package init(schema: String?, databasePoolSize: Int = 8, events: Bool = true, keys: (prefix: String, url: String)? = nil) {
            self.schema = schema
            self.databasePoolSize = databasePoolSize
            self.events = events
            self.keys = keys
        }
    }

    /// Makes the service's database and its environment: the standard variables `needs` names,
    /// then the service's own (`settings`), then the test's `overrides`.
    package static func prepare(
        _ needs: Needs,
        settings: [String: String] = [:],
        overrides: [String: String] = [:]
    ) async throws -> ServiceHarness {
        var environment = ["HTTP_PORT": "0"]
        var database: TestDatabase?
        var databaseURL: String?
        var databaseRole: String?
        if let schema = needs.schema {
            let created = try await TestPostgres.shared.makeDatabase()
            let (role, url) = try await created.makeServiceRole(schema: schema, password: rolePassword(schema))
            environment["DATABASE_URL"] = url
            environment["DATABASE_POOL_SIZE"] = String(needs.databasePoolSize)
            database = created
            databaseURL = url
            databaseRole = role
        }
        if needs.events {
            environment["KAFKA_BROKERS"] = try await TestKafka.shared.running().bootstrapServers
            environment["KAFKA_CREATE_TOPICS"] = "false"
            environment["KAFKA_FETCH_MAX_WAIT"] = "10ms"
            environment["OUTBOX_POLL_INTERVAL"] = "100ms"
            environment.merge(Self.consumerGroups()) { _, own in own }
        }
        if let (prefix, url) = needs.keys {
            environment["\(prefix)_JWKS_URL"] = url
            environment["\(prefix)_JWT_ISSUER"] = issuer
        }
        environment.merge(settings) { _, own in own }
        environment.merge(overrides) { _, override in override }
        return ServiceHarness(database: database, databaseURL: databaseURL, databaseRole: databaseRole, environment: environment)
    }

    /// A consumer group of its own for each of the services' consumers: tests share one broker,
    /// and two instances of a service with their own databases in one group would split the
    /// partitions between them, each missing what the other read.
    package static func consumerGroups() -> [String: String] {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let variables = [
            "AUTH_CONSUMER_GROUP", "SOCIAL_PROJECTION_GROUP", "RENDER_WORKER_GROUP", "RENDER_ERASURE_GROUP", "CATALOG_ERASURE_GROUP",
            "TRACKING_ERASURE_GROUP", "NOTIFY_CONSUMER_GROUP",
        ]
        return Dictionary(uniqueKeysWithValues: variables.map { ($0, "\($0.lowercased())-\(suffix)") })
    }

    /// The password of the role that owns `schema` in a test database.
    package static func rolePassword(_ schema: String) -> String {
        "\(schema)-test-role"
    }

    /// Reads the service's configuration from the environment, builds its application with
    /// `build` (its `buildApplication`) and runs it for `body`; `environment` replaces the
    /// prepared one (a second replica's, say).
    package func run<Configuration: ServiceConfiguration, App: ApplicationProtocol, Result: Sendable>(
        _ name: String,
        _ type: Configuration.Type,
        logger: Logger,
        environment: [String: String]? = nil,
        tasksOnEventLoops: Bool = false,
        build: @escaping @Sendable (Configuration, ServiceRuntime) async throws -> App,
        _ body: @Sendable (RunningApplication) async throws -> Result
    ) async throws -> Result {
        try await run(name, type, logger: logger, replicas: 1, environment: environment, tasksOnEventLoops: tasksOnEventLoops, build: build) {
            try await body($0[0])
        }
    }

    /// As `run`, with `replicas` applications of the one configuration side by side, as replicas
    /// of a deployment share its database and consumer groups.
    package func run<Configuration: ServiceConfiguration, App: ApplicationProtocol, Result: Sendable>(
        _ name: String,
        _ type: Configuration.Type,
        logger: Logger,
        replicas: Int,
        environment: [String: String]? = nil,
        tasksOnEventLoops: Bool = false,
        build: @escaping @Sendable (Configuration, ServiceRuntime) async throws -> App,
        _ body: @Sendable ([RunningApplication]) async throws -> Result
    ) async throws -> Result {
        let configuration = try Configuration(from: ConfigurationReader(environment ?? self.environment))
        @Sendable func start(_ remaining: Int, _ running: [RunningApplication]) async throws -> Result {
            guard remaining > 0 else { return try await body(running) }
            let application = try await build(configuration, ServiceRuntime(name: name, logger: logger, metrics: ServiceMetrics()))
            return try await withRunningApplication(application, tasksOnEventLoops: tasksOnEventLoops) { app in
                try await start(remaining - 1, running + [app])
            }
        }
        return try await start(replicas, [])
    }

    /// A logger that writes only warnings and worse, so a test's output stays readable; a label
    /// named in `SPLASH_TEST_VERBOSE` (comma-separated, e.g. `notify`) writes from `info` up, for
    /// chasing what a service did in a failing test.
    package static func quietLogger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        let verbose = ProcessInfo.processInfo.environment["SPLASH_TEST_VERBOSE"]?.split(separator: ",").contains { $0 == label } ?? false
        logger.logLevel = verbose ? .info : .warning
        return logger
    }
}
