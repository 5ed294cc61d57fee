import Contracts
import Foundation
import Identity
import LocalStack
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What `splash up` and `splash postgres` run, and how each piece is started and found ready.
struct LocalStackPlan {
    let dataDirectory: URL
    let postgresPort: Int
    let cluster: PostgresCluster
    let secrets: SecretStore
    let database: LocalDatabase

    /// The running `splash` executable; services are looked for beside it.
    static let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()

    init(dataDirectory: String, postgresPort: Int) throws {
        let root = URL(fileURLWithPath: dataDirectory, isDirectory: true).standardizedFileURL
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        self.dataDirectory = root
        self.postgresPort = postgresPort
        self.cluster = try PostgresCluster(dataDirectory: root.appendingPathComponent("postgres"), environment: ProcessInfo.processInfo.environment)
        self.secrets = SecretStore(directory: root.appendingPathComponent("secrets"))
        self.database = LocalDatabase(port: postgresPort)
    }

    var kafkaBootstrapFile: URL { dataDirectory.appendingPathComponent("kafka.bootstrap") }

    // MARK: Postgres

    /// Initialises the cluster on first use and describes the supervised server.
    func postgres() async throws -> SupervisedProcess.Specification {
        let postmasterPID = cluster.dataDirectory.appendingPathComponent("postmaster.pid")
        if let contents = try? String(contentsOf: postmasterPID, encoding: .utf8),
            let pid = contents.split(separator: "\n").first.flatMap({ pid_t($0) }), kill(pid, 0) == 0
        {
            throw LocalStackError.alreadyRunning(what: "Postgres for \(cluster.dataDirectory.path)", detail: "pid \(pid)")
        }
        if !cluster.isInitialized {
            say("Initialising a Postgres cluster in \(cluster.dataDirectory.path)")
            try await cluster.initialize(superuserPassword: try secrets.secret(PostgresCluster.superuser))
        }
        let command = cluster.serverCommand(port: postgresPort, durability: .durable, owner: getpid())
        return SupervisedProcess.Specification(name: "postgres", command: command)
    }

    /// Waits for the server, then creates the database, the service roles and their schemas.
    func prepareDatabase(isAlive: @Sendable @escaping () async -> Bool, logger: Logger) async throws {
        let superuserPassword = try secrets.secret(PostgresCluster.superuser)
        try await PostgresCluster.waitUntilReady(port: postgresPort, password: superuserPassword, timeout: .seconds(60), isAlive: isAlive)
        try await database.provision(
            superuserPassword: superuserPassword,
            services: ServiceCatalog.all,
            passwords: try rolePasswords(),
            logger: logger
        )
    }

    func rolePasswords() throws -> [String: String] {
        var passwords: [String: String] = [:]
        for role in ServiceCatalog.all.compactMap(\.role) {
            passwords[role] = try secrets.secret(role)
        }
        return passwords
    }

    // MARK: Kafka

    /// `splash kafka` as a child process, writing its bootstrap address to `kafkaBootstrapFile`.
    func kafka() -> SupervisedProcess.Specification {
        let bootstrapFile = kafkaBootstrapFile
        return SupervisedProcess.Specification(
            name: "kafka",
            command: ProcessCommand(Self.executable, ["kafka", "--data-dir", dataDirectory.path, "--exit-with-parent", String(getpid())]),
            prepare: { try? FileManager.default.removeItem(at: bootstrapFile) }
        )
    }

    /// The broker's bootstrap address once `splash kafka` has written it.
    func kafkaBootstrap() -> String? {
        (try? String(contentsOf: kafkaBootstrapFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Services

    /// The services of the catalog whose executable has been built (beside `splash`).
    func builtServices() -> [(service: LocalService, executable: URL)] {
        let directory = Self.executable.deletingLastPathComponent()
        return ServiceCatalog.all.compactMap { service in
            let executable = directory.appendingPathComponent(service.executable)
            return FileManager.default.isExecutableFile(atPath: executable.path) ? (service, executable) : nil
        }
    }

    /// A service with the settings every service gets, plus its own.
    func service(_ service: LocalService, executable: URL, kafkaBootstrap: String, colored: Bool) throws -> SupervisedProcess.Specification {
        var environment = [
            "HTTP_HOST": "127.0.0.1",
            "HTTP_PORT": String(service.port),
            "KAFKA_BROKERS": kafkaBootstrap,
            "LOG_FORMAT": "text",
            "LOG_COLOR": colored ? "always" : "never",
            "SHUTDOWN_GRACE": "5s",
            "SPLASH_DATA_DIR": dataDirectory.path,
            "SPLASH_PARENT_PID": String(getpid()),
        ]
        if let role = service.role {
            environment["DATABASE_URL"] = database.url(role: role, password: try secrets.secret(role))
        }
        // The embedded broker holds every catalog topic and answers no CreateTopics. It also
        // holds an empty fetch for its whole wait instead of answering when records arrive, so a
        // short wait keeps events quick.
        environment["KAFKA_CREATE_TOPICS"] = "false"
        environment["KAFKA_FETCH_MAX_WAIT"] = "10ms"
        if service.executable == "auth" {
            // A development signing key, generated once and kept with the other local secrets.
            environment["AUTH_JWT_KEY_FILE"] = try secrets.file(DevelopmentKeys.authSigningKeyFile) { SigningKey.generate().pem }.path
        }
        if ["photo-catalog", "edit-render", "social"].contains(service.executable) {
            // What edit-render and social present to photo-catalog when they report an Unsplash
            // photo's use.
            environment["CATALOG_SERVICE_TOKEN_FILE"] = try secrets.secretFile("catalog-service-token").path
        }
        if ["auth", "tracking", "notify"].contains(service.executable) {
            // What tracking presents to auth's admin API to make its restaurants' owner accounts,
            // and notify to look up where a receipt goes.
            environment["AUTH_SERVICE_TOKEN_FILE"] = try secrets.secretFile("auth-service-token").path
        }
        if service.executable == "edit-render" || service.executable == "social" {
            // edit-render signs its media links with it; social its storage links and links to
            // rendered edits.
            environment["RENDER_MEDIA_KEY_FILE"] = try secrets.secretFile("render-media-key").path
        }
        environment.merge(service.environment) { _, own in own }
        return SupervisedProcess.Specification(name: service.executable, command: ProcessCommand(executable, [], environment: environment))
    }

    /// `tracking-simulator` through the gateway, when it is built and the gateway and tracking run:
    /// five drivers and two customers with a kitchen, `speed` times real time.
    func simulator(services: [LocalService], speed: Double, colored: Bool) throws -> SupervisedProcess.Specification? {
        let executable = Self.executable.deletingLastPathComponent().appendingPathComponent("tracking-simulator")
        guard FileManager.default.isExecutableFile(atPath: executable.path),
            let gateway = services.first(where: { $0.executable == "gateway" }), services.contains(where: { $0.executable == "tracking" })
        else { return nil }
        let environment = [
            "AUTH_SERVICE_TOKEN_FILE": try secrets.secretFile("auth-service-token").path,
            "LOG_COLOR": colored ? "always" : "never",
        ]
        return SupervisedProcess.Specification(
            name: "simulator",
            command: ProcessCommand(
                executable,
                [
                    "--gateway", "http://127.0.0.1:\(gateway.port)", "--drivers", "5", "--customers", "2", "--speed", String(speed),
                ],
                environment: environment
            )
        )
    }
}
