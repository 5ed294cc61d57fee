import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Identity
import Kafka
import LocalStack
import Logging
import NIOHTTP1
import ServiceKit
import Synchronization
import TestSupport

/// auth as a process on a Postgres and a Kafka cluster of the test's own, which the test may take
/// down and bring back while it writes, and what a test reads back from both to prove nothing was
/// lost or done twice. auth may be killed and started again (`killAuth`, `startAuth`); gateway and
/// tracking replicas are started on demand, for the test to kill.
final class SystemStack: Sendable {
    let postgres: OwnPostgres
    let database: TestDatabase
    let kafka: KafkaEmbeddedCluster
    private let authEnvironment: [String: String]
    private let running: Mutex<ServiceProcess?>

    /// The auth process now running (the last one started).
    var auth: ServiceProcess { running.withLock { $0! } }

    private init(postgres: OwnPostgres, database: TestDatabase, kafka: KafkaEmbeddedCluster, authEnvironment: [String: String]) {
        (self.postgres, self.database, self.kafka, self.authEnvironment) = (postgres, database, kafka, authEnvironment)
        running = Mutex(nil)
    }

    static let issuer = "http://localhost:8080/auth/v1"
    /// The service token auth accepts for its admin API.
    static let serviceToken = "system-tests-service-token-0123456789abcdef"

    /// - Parameters:
    ///   - postgresHost: a network host for Postgres, to partition it from auth.
    ///   - authSettings: added to auth's environment.
    static func start(postgresHost: NetworkHost? = nil, authSettings: [String: String] = [:]) async throws -> SystemStack {
        let postgres = try await OwnPostgres.start(on: postgresHost)
        let database = try await postgres.makeDatabase()
        let kafka = try KafkaEmbeddedCluster(brokers: 3, topics: TopicCatalog.all)
        let stack = SystemStack(
            postgres: postgres,
            database: database,
            kafka: kafka,
            authEnvironment: [
                "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
                "OUTBOX_POLL_INTERVAL": "100ms", "LOG_LEVEL": "warning",
                "DATABASE_URL": try await database.makeServiceRole(schema: "auth", password: "system-auth").url,
                "AUTH_JWT_KEY": SigningKey.generate().pem,
                "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4",
                "AUTH_RATE_LIMIT_TOKEN": "1000000/1m", "AUTH_RATE_LIMIT_SIGNUP": "1000000/1m", "AUTH_SERVICE_TOKEN": serviceToken,
            ].merging(authSettings) { _, new in new }
        )
        try await stack.startAuth()
        return stack
    }

    /// Starts an auth process (after `killAuth`, a new one on the same database and signing key).
    func startAuth() async throws {
        let process = try await ServiceProcess("auth", environment: authEnvironment)
        running.withLock { $0 = process }
    }

    /// SIGKILLs the auth process: it dies mid-work, its transactions rolled back by Postgres.
    func killAuth() async {
        await auth.kill()
    }

    func stop() async {
        await auth.stop()
        kafka.shutdown()
        await postgres.stop()
    }

    /// What the sign-ups of a run were answered.
    struct SignUps: Sendable {
        /// The ids of the accounts made (200).
        var made: [String] = []
        /// Every other answer's status, in order; 0 when no answer came.
        var refused: [Int] = []
        /// When each answer came, with its status (0: none), from the run's start.
        var timeline: [(at: Duration, status: Int)] = []
    }

    /// Signs up a new account every `interval` for `duration`, straight to auth, each with a
    /// deadline of 5 s.
    func signUp(for duration: Duration, every interval: Duration = .milliseconds(50)) async -> SignUps {
        let start = ContinuousClock.now
        var result = SignUps()
        var index = 0
        while ContinuousClock.now - start < duration {
            index += 1
            let tick = start + interval * index
            var request = HTTPClientRequest(url: "\(auth.baseURL)/auth/v1/signup")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            let email = "system-\(UUID().uuidString.prefix(12).lowercased())@system.splash.example"
            request.body = .bytes(Data(#"{"email":"\#(email)","password":"a long password 1"}"#.utf8))
            var status = 0
            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(5)) {
                status = Int(response.status.code)
                let body = (try? await response.body.collect(upTo: 1 << 20)).map { Data(buffer: $0) } ?? Data()
                if status == 200, let json = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                    let id = (json["user"] as? [String: Any])?["id"] as? String
                {
                    result.made.append(id)
                } else if status == 200 {
                    status = -1  // a 200 without the account's id
                }
            }
            if status != 200 { result.refused.append(status) }
            result.timeline.append((ContinuousClock.now - start, status))
            try? await Task.sleep(until: tick)
        }
        return result
    }

    /// The ids of every account in auth's table.
    func accountIDs() async throws -> Set<String> {
        try await database.withClient { client in
            var ids = Set<String>()
            for try await id in try await client.query("SELECT id::text FROM auth.users").decode(String.self) { ids.insert(id) }
            return ids
        }
    }

    /// Publishes `event` on its topic as auth would, from outside auth.
    func publish<Event: DomainEvent>(_ event: Event) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers, clientID: "system-test"),
            logger: Logger(label: "system-test")
        )
        try await withRunningServices([producer]) {
            _ = try await producer.send(EventEnvelope(event, source: "auth").record(topic: Event.topic.name))
        }
    }

    /// The envelopes parked on `topic`'s dead-letter topic.
    func deadLetters(of topic: String) async throws -> [EventEnvelope] {
        try await publishedEvents(on: DeadLetter.topic(for: topic), bootstrapServers: kafka.bootstrapServers)
    }

    /// Runs the `splash` CLI built beside the tests with `arguments`; its output.
    func splash(_ arguments: [String]) async throws -> String {
        try await ProcessCommand(builtExecutable("splash"), arguments).runToCompletion()
    }

    /// A gateway replica in front of auth, on the stack's cluster; the test stops or kills it.
    func startGateway(settings: [String: String] = [:]) async throws -> ServiceProcess {
        try await ServiceProcess(
            "gateway",
            environment: common.merging(
                [
                    "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_JWT_ISSUER": Self.issuer,
                    "GATEWAY_RATE_LIMIT_AUTH": "100000/1m", "GATEWAY_REALTIME_HEARTBEAT": "500ms",
                ].merging(settings) { _, new in new }
            ) { _, new in new }
        )
    }

    /// A tracking replica (not seeded) on `databaseURL` (`database.makeServiceRole(schema: "tracking", …)`,
    /// made once for all replicas) and the stack's cluster; the test stops or kills it.
    func startTracking(databaseURL: String, settings: [String: String] = [:]) async throws -> ServiceProcess {
        try await ServiceProcess(
            "tracking",
            environment: common.merging(
                [
                    "DATABASE_URL": databaseURL, "TRACKING_JWKS_URL": jwksURL, "TRACKING_JWT_ISSUER": Self.issuer, "TRACKING_SEED": "false",
                ].merging(settings) { _, new in new }
            ) { _, new in new }
        )
    }

    /// The secrets the services share: what edit-render and social present to photo-catalog,
    /// and the key edit-render signs its media links with (social checks them).
    static let catalogServiceToken = "system-tests-catalog-token-0123456789abcdef"
    static let mediaKey = "system-tests-media-key-0123456789abcdef0123"

    /// What every service process of the stack gets.
    private var common: [String: String] {
        [
            "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
            "OUTBOX_POLL_INTERVAL": "100ms", "EVENTS_RETRY_BACKOFF": "50ms", "LOG_LEVEL": "warning",
        ]
    }

    private var jwksURL: String { "\(auth.baseURL)/auth/v1/.well-known/jwks.json" }

    /// social (its projections reading `auth.users` and `render.results` in their own group) on
    /// `databaseURL` (`database.makeServiceRole(schema: "social", …)`) and the stack's cluster; the
    /// test stops or kills it. `photoCatalog` is where it describes Unsplash photos (none by default:
    /// the projections alone call nothing).
    func startSocial(
        databaseURL: String,
        photoCatalog: String = "http://127.0.0.1:9",
        blobs: URL = FileManager.default.temporaryDirectory.appendingPathComponent("system-social-\(UUID().uuidString.prefix(8))"),
        settings: [String: String] = [:]
    ) async throws -> ServiceProcess {
        try await ServiceProcess(
            "social",
            environment: common.merging(
                [
                    "DATABASE_URL": databaseURL, "SOCIAL_JWKS_URL": jwksURL, "SOCIAL_JWT_ISSUER": Self.issuer,
                    "SOCIAL_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": Self.mediaKey, "CATALOG_SERVICE_TOKEN": Self.catalogServiceToken,
                    "SOCIAL_PHOTO_CATALOG_URL": photoCatalog, "SOCIAL_IMAGE_WORKERS": "1",
                ].merging(settings) { _, new in new }
            ) { _, new in new }
        )
    }

    /// notify on `databaseURL` (`database.makeServiceRole(schema: "notify", …)`) and the stack's
    /// cluster, without an APNs key (pushes go to its sink), on `port` when given (one started
    /// again where the gateway finds it); the test stops it.
    func startNotify(databaseURL: String, settings: [String: String] = [:], port: Int? = nil) async throws -> ServiceProcess {
        try await ServiceProcess(
            "notify",
            environment: common.merging(
                [
                    "DATABASE_URL": databaseURL, "NOTIFY_JWKS_URL": jwksURL, "NOTIFY_JWT_ISSUER": Self.issuer,
                    "NOTIFY_AUTH_URL": auth.baseURL, "AUTH_SERVICE_TOKEN": Self.serviceToken,
                ].merging(settings) { _, new in new }
            ) { _, new in new },
            port: port
        )
    }

    /// photo-catalog serving its bundled fixture photos (no Unsplash key), their image URLs on
    /// itself; the test stops it.
    func startPhotoCatalog(settings: [String: String] = [:]) async throws -> ServiceProcess {
        let port = freePort()
        return try await ServiceProcess(
            "photo-catalog",
            environment: common.merging(
                [
                    "DATABASE_URL": try await database.makeServiceRole(schema: "catalog", password: "system-catalog").url,
                    "CATALOG_JWKS_URL": jwksURL, "CATALOG_JWT_ISSUER": Self.issuer, "CATALOG_PUBLIC_URL": "http://127.0.0.1:\(port)",
                    "CATALOG_SERVICE_TOKEN": Self.catalogServiceToken,
                ].merging(settings) { _, new in new }
            ) { _, new in new },
            port: port
        )
    }

    /// edit-render (its API and one render worker in one process) on `databaseURL`
    /// (`database.makeServiceRole(schema: "render", …)`), fetching sources from `photoCatalog`,
    /// its files in `blobs`, on `port` when given (one started again where the gateway finds it);
    /// the test stops or kills it.
    func startEditRender(
        databaseURL: String,
        photoCatalog: ServiceProcess,
        blobs: URL,
        settings: [String: String] = [:],
        port: Int? = nil
    ) async throws -> ServiceProcess {
        try await ServiceProcess(
            "edit-render",
            environment: common.merging(
                [
                    "DATABASE_URL": databaseURL, "RENDER_JWKS_URL": jwksURL, "RENDER_JWT_ISSUER": Self.issuer,
                    "RENDER_PUBLIC_URL": "http://127.0.0.1", "RENDER_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": Self.mediaKey,
                    "RENDER_PHOTO_CATALOG_URL": photoCatalog.baseURL, "CATALOG_SERVICE_TOKEN": Self.catalogServiceToken,
                    "RENDER_SOURCE_HOSTS": "127.0.0.1", "RENDER_ALLOW_PRIVATE_SOURCES": "true", "RENDER_WORKERS": "1",
                ].merging(settings) { _, new in new }
            ) { _, new in new },
            port: port
        )
    }

    /// A new account straight from auth with `username`: its id.
    func account(username: String) async throws -> String {
        let email = "system-\(UUID().uuidString.prefix(12).lowercased())@system.splash.example"
        let json = try await call(
            auth.baseURL,
            .POST,
            "/auth/v1/signup",
            json: ["email": email, "password": "a long password 1", "data": ["username": username]],
            expecting: 200
        )
        guard let id = (json["user"] as? [String: Any])?["id"] as? String else { throw SystemStackError.unexpectedAnswer("\(json)") }
        return id
    }

    /// A new account straight from auth: its id and access token.
    func account() async throws -> (id: String, token: String) {
        let email = "system-\(UUID().uuidString.prefix(12).lowercased())@system.splash.example"
        let json = try await call(auth.baseURL, .POST, "/auth/v1/signup", json: ["email": email, "password": "a long password 1"], expecting: 200)
        guard let token = json["access_token"] as? String, let id = (json["user"] as? [String: Any])?["id"] as? String else {
            throw SystemStackError.unexpectedAnswer("\(json)")
        }
        return (id, token)
    }

    /// A new account with Splash role `role`, made through auth's admin API, signed in.
    func account(role: String) async throws -> (id: String, token: String) {
        let email = "system-\(role)-\(UUID().uuidString.prefix(8).lowercased())@system.splash.example"
        let user = try await call(
            auth.baseURL,
            .POST,
            "/auth/v1/admin/users",
            json: [
                "email": email, "password": "a long password 1", "email_confirm": true, "app_metadata": ["role": role],
            ],
            headers: [("X-Splash-Service-Token", Self.serviceToken)],
            expecting: 200
        )
        let session = try await call(
            auth.baseURL,
            .POST,
            "/auth/v1/token?grant_type=password",
            json: ["email": email, "password": "a long password 1"],
            expecting: 200
        )
        guard let id = user["id"] as? String, let token = session["access_token"] as? String else {
            throw SystemStackError.unexpectedAnswer("\(user) \(session)")
        }
        return (id, token)
    }

    /// A restaurant near Helsinki's centre with one dish (`m1`), made by an admin through
    /// tracking at `base` (tracking itself or a gateway in front of it), and its kitchen's account,
    /// which owns it.
    func restaurant(at base: String) async throws -> (id: String, kitchen: (id: String, token: String)) {
        let admin = try await account(role: "admin")
        let kitchen = try await account(role: "restaurant")
        let restaurant = try await call(
            base,
            .POST,
            "/v1/restaurants",
            token: admin.token,
            json: [
                "ownerId": kitchen.id, "name": "System Kitchen", "location": ["lat": 60.1699, "lng": 24.9384],
                "menu": [["id": "m1", "name": "Soup of the day", "priceCents": 1_250]],
            ],
            expecting: 201
        )
        guard let id = restaurant["id"] as? String else { throw SystemStackError.unexpectedAnswer("\(restaurant)") }
        return (id, kitchen)
    }

    /// Changes the username of the account `token` signs in.
    func rename(_ token: String, to username: String) async throws {
        _ = try await call(auth.baseURL, .PUT, "/auth/v1/user", token: token, json: ["data": ["username": username]], expecting: 200)
    }

    /// A JSON request to `base`; its status and JSON object (empty when it is not one). Throws
    /// when no answer comes (a dead process), or with `expecting` when the status differs.
    func call(
        _ base: String,
        _ method: HTTPMethod,
        _ path: String,
        token: String? = nil,
        json: Any? = nil,
        headers: [(String, String)] = [],
        expecting: Int? = nil
    ) async throws -> [String: Any] {
        let (status, body) = try await call(base, method, path, token: token, json: json, headers: headers)
        if let expecting, status != expecting {
            throw SystemStackError.unexpectedAnswer("\(method) \(path): \(status) \(body)")
        }
        return body
    }

    func call(
        _ base: String,
        _ method: HTTPMethod,
        _ path: String,
        token: String? = nil,
        json: Any? = nil,
        headers: [(String, String)] = []
    ) async throws -> (status: Int, body: [String: Any]) {
        try await jsonRequest(method, base + path, token: token, json: json, headers: headers, timeout: .seconds(10))
    }

    /// The ids of the `auth.profile.updated.v1` events about `account` on Kafka, in their order.
    func profileUpdates(of account: String) async throws -> [String] {
        try await publishedEvents(on: TopicCatalog.authUsers.name, bootstrapServers: kafka.bootstrapServers)
            .filter { $0.type == ProfileUpdated.type && $0.key == account }
            .map { $0.id.uuidString.lowercased() }
    }

    /// The keys of auth's outbox rows not marked published (nor failed).
    func unpublishedOutboxKeys() async throws -> Set<String> {
        try await database.withClient { client in
            var keys = Set<String>()
            for try await key in try await client.query("SELECT key FROM auth.outbox WHERE published_at IS NULL AND failed_at IS NULL").decode(
                String.self
            ) {
                keys.insert(key)
            }
            return keys
        }
    }

    /// The `auth.user.registered.v1` events on Kafka, as their distinct event ids per account.
    func registrations() async throws -> [String: Set<UUID>] {
        try await registrationRecords().mapValues(Set.init)
    }

    /// Every `auth.user.registered.v1` record on Kafka, redeliveries included: its event id, per account.
    func registrationRecords() async throws -> [String: [UUID]] {
        var byAccount: [String: [UUID]] = [:]
        for event in try await publishedEvents(on: TopicCatalog.authUsers.name, bootstrapServers: kafka.bootstrapServers)
        where event.type == UserRegistered.type {
            byAccount[event.key, default: []].append(event.id)
        }
        return byAccount
    }
}

enum SystemStackError: Error {
    case unexpectedAnswer(String)
}
