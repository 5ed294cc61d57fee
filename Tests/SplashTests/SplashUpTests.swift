import AsyncHTTPClient
import AsyncSignals
import Contracts
import Foundation
import Identity
import LocalStack
import Logging
import PostgresNIO
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension LocalStackOnFixedPorts {
    /// `splash up` as a developer runs it: the real binary, its own Postgres and broker, then Ctrl-C.
    @Suite("splash up")
    struct SplashUpTests {
        @Test func bringsUpPostgresAndTheBrokerAndStopsThemInReverseOrderOnControlC() async throws {
            try await WholeStackTurns.take {
                let stack = try SplashUp()
                let data = stack.dataDirectory
                let postgresPort = stack.postgresPort
                try await stack.waitUntilUp()

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
                    configuration: .init(
                        host: "127.0.0.1",
                        port: postgresPort,
                        username: "splash_catalog",
                        password: password,
                        database: "splash",
                        tls: .disable
                    ),
                    id: 1,
                    logger: logger
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
                        let body = response.body
                    else { return false }
                    return String(buffer: body).contains(kid)
                }

                // Ctrl-C: everything stops, the broker before Postgres, well within 10 seconds.
                let stopping = ContinuousClock.now
                kill(stack.process.processIdentifier, SIGINT)
                #expect(await stack.exited.arrives(within: .seconds(12)))
                #expect(stopping.duration(to: .now) < .seconds(10))
                #expect(await stack.exited.value() == 0)
                let lines = stack.output.text.split(separator: "\n")
                let brokerStopped = try #require(lines.firstIndex { $0.contains("Kafka broker stopped") })
                let postgresStopped = try #require(lines.firstIndex { $0.contains("database system is shut down") })
                #expect(brokerStopped < postgresStopped)
                #expect(!acceptsConnections(port: postgresPort))
            }
        }
    }
}
