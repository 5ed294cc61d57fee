import AsyncHTTPClient
import AsyncSignals
import Contracts
import Foundation
import Identity
import LocalStack
import Logging
import PostgresNIO
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `splash up` as a developer runs it: the real binary, its own Postgres and broker, then Ctrl-C.
@Suite("splash up")
struct SplashUpTests {
    /// The `splash` binary built beside this test bundle (`swift build --build-tests` builds both).
    static let splash = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("splash")

    @Test func bringsUpPostgresAndTheBrokerAndStopsThemInReverseOrderOnControlC() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.splash.path), "build splash first: swift build --build-tests")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("splash-up-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: data) }
        let postgresPort = freePort()
        let output = try CapturedOutput()

        let process = ProcessCommand(Self.splash, ["up", "--data-dir", data.path, "--postgres-port", String(postgresPort), "--exit-with-parent", String(getpid())]).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        let exited = OneShot<Int32>()
        process.terminationHandler = { exited.complete($0.terminationStatus) }
        try process.run()
        defer { if process.isRunning { ProcessTree.kill(process.processIdentifier) } }

        try await waitUntilReady("splash up", timeout: .seconds(90)) { output.text.contains("Splash is up") }

        // The broker answers a client nobody here wrote, with the catalog's topics.
        let bootstrap = try String(contentsOf: data.appendingPathComponent("kafka.bootstrap"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let kcat = try #require(TestKafka.kcat, "kcat is not installed; `make test` installs it")
        let metadata = try await ProcessCommand(kcat, ["-b", bootstrap, "-L", "-m", "10"]).runToCompletion()
        for topic in TopicCatalog.all {
            #expect(metadata.contains("topic \"\(topic.name)\" with \(topic.partitions) partition"), "\(topic.name)")
        }

        // Postgres has the database and a service role with a generated password.
        let password = try String(contentsOf: data.appendingPathComponent("secrets/splash_catalog.secret"), encoding: .utf8)
        let logger = Logger(label: "splash-up-test")
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: "127.0.0.1", port: postgresPort, username: "splash_catalog", password: password, database: "splash", tls: .disable),
            id: 1, logger: logger
        )
        let searchPath = try await connection.query("SHOW search_path", logger: logger).collect().first?.decode(String.self)
        try await connection.close()
        #expect(searchPath == "catalog")

        // auth runs with the development signing key splash generated under the data directory,
        // and publishes it.
        let keyFile = data.appendingPathComponent("secrets/auth-jwt-key.pem")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let kid = try SigningKey(pem: String(contentsOf: keyFile, encoding: .utf8)).id
        try await waitUntilReady("auth", timeout: .seconds(60)) {
            guard let response = try? await HTTPClient.shared.get(url: "http://127.0.0.1:8081/auth/v1/.well-known/jwks.json").get(),
                  let body = response.body else { return false }
            return String(buffer: body).contains(kid)
        }

        // Ctrl-C: everything stops, the broker before Postgres, well within 10 seconds.
        let stopping = ContinuousClock.now
        kill(process.processIdentifier, SIGINT)
        #expect(await exited.arrives(within: .seconds(12)))
        #expect(stopping.duration(to: .now) < .seconds(10))
        #expect(await exited.value() == 0)
        let lines = output.text.split(separator: "\n")
        let brokerStopped = try #require(lines.firstIndex { $0.contains("Kafka broker stopped") })
        let postgresStopped = try #require(lines.firstIndex { $0.contains("database system is shut down") })
        #expect(brokerStopped < postgresStopped)
        #expect(!acceptsConnections(port: postgresPort))
    }
}
