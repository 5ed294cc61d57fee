import Contracts
import Foundation
import Identity
import LocalStack
import ServiceKit
import Testing
import Yams

@Suite("docker-compose.yml")
struct ComposeFileTests {
    let compose: [String: Any]
    let services: [String: [String: Any]]

    init() throws {
        compose = try #require(try Yams.load(yaml: try Repository.text("docker-compose.yml")) as? [String: Any])
        services = try #require(compose["services"] as? [String: [String: Any]])
    }

    /// A compose service's `environment`, as written (before interpolation).
    func environment(of service: String) -> [String: String] {
        let raw = services[service]?["environment"]
        if let map = raw as? [String: Any] {
            return map.mapValues { "\($0)" }
        }
        if let list = raw as? [String] {
            let pairs = list.compactMap { entry -> (String, String)? in
                let parts = entry.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }
            return Dictionary(pairs, uniquingKeysWith: { _, last in last })
        }
        return [:]
    }

    /// The environment a service's configuration loads from in its container: interpolated as
    /// compose does, and each file the container has from a volume (`/certs/ca.pem` from
    /// `mail-certs:/certs`), which this test cannot open, stood in for by a readable file.
    func loadableEnvironment(of service: String) throws -> [String: String] {
        let mounts = ((services[service]?["volumes"] as? [String]) ?? []).compactMap { volume -> String? in
            let parts = volume.split(separator: ":")
            return parts.count >= 2 ? String(parts[1]) : nil
        }
        let standIn = FileManager.default.temporaryDirectory.appendingPathComponent("compose-mounted-file.pem")
        try "-----BEGIN CERTIFICATE-----\n".write(to: standIn, atomically: true, encoding: .utf8)
        return environment(of: service).mapValues(Self.interpolated).mapValues { value in
            mounts.contains { value.hasPrefix($0 + "/") } ? standIn.path : value
        }
    }

    @Test func runsKafkaInKRaftModeAndPostgres16() throws {
        let kafka = try #require(services["kafka"])
        #expect((kafka["image"] as? String)?.hasPrefix("apache/kafka:") == true)
        let roles = Set((environment(of: "kafka")["KAFKA_PROCESS_ROLES"] ?? "").split(separator: ",").map(String.init))
        #expect(roles == ["broker", "controller"])
        #expect(environment(of: "kafka")["KAFKA_ZOOKEEPER_CONNECT"] == nil)
        #expect((services["postgres"]?["image"] as? String)?.hasPrefix("postgres:16") == true)
    }

    /// `--profile ha`: two more brokers joining the first's KRaft controller, and the topics made on
    /// all three once they are up (SPLASH_KAFKA_REPLICATION=3); without the profile, one broker.
    @Test func theHAProfileAddsTwoBrokersAndReplicatesEveryTopic() throws {
        var nodes: Set<String> = [environment(of: "kafka")["KAFKA_NODE_ID"] ?? ""]
        for name in ["kafka-2", "kafka-3"] {
            let broker = try #require(services[name])
            #expect(broker["profiles"] as? [String] == ["ha"], "\(name) runs only with --profile ha")
            let environment = environment(of: name)
            #expect(environment["KAFKA_PROCESS_ROLES"] == "broker")
            #expect(environment["KAFKA_CONTROLLER_QUORUM_VOTERS"] == self.environment(of: "kafka")["KAFKA_CONTROLLER_QUORUM_VOTERS"])
            #expect(environment["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://\(name):9092")
            nodes.insert(environment["KAFKA_NODE_ID"] ?? "")
            let waits = (services["kafka-topics"]?["depends_on"] as? [String: [String: Any]])?[name]
            #expect(
                waits?["condition"] as? String == "service_healthy" && waits?["required"] as? Bool == false,
                "topics wait for \(name) when it runs"
            )
        }
        #expect(nodes.count == 3, "three node ids")
        #expect(environment(of: "kafka-topics")["KAFKA_REPLICATION_FACTOR"] == "${SPLASH_KAFKA_REPLICATION:-1}")
        #expect(environment(of: "kafka")["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "${SPLASH_KAFKA_REPLICATION:-1}")
    }

    @Test func createsTheTopicCatalogBeforeAnyServiceStarts() throws {
        let initStep = try #require(services["kafka-topics"])
        let entrypoint = (initStep["entrypoint"] as? [String])?.joined(separator: " ") ?? ""
        #expect(entrypoint.contains("create-topics.sh"))
        #expect((initStep["volumes"] as? [String])?.contains { $0.hasPrefix("./deploy/kafka:") } == true)

        let anchor = try #require(compose["x-splash-service"] as? [String: Any])
        let dependencies = try #require(anchor["depends_on"] as? [String: [String: String]])
        #expect(dependencies["kafka-topics"]?["condition"] == "service_completed_successfully")
    }

    /// edit-render's API and workers and social keep their blobs in MinIO's one bucket, made before
    /// they start, so no two of them need a volume in common (the render volume is gone).
    @Test func theServicesThatStoreBlobsShareMinIOsBucketAndWaitForIt() throws {
        let bucketStep = try #require(services["minio-bucket"])
        let made = (bucketStep["entrypoint"] as? [String])?.joined(separator: " ") ?? ""
        #expect((services["minio"]?["image"] as? String)?.hasPrefix("minio/minio:") == true)
        for name in ["edit-render", "edit-render-worker", "social"] {
            let environment = environment(of: name)
            #expect(environment["BLOB_STORE"] == "s3" && environment["S3_ENDPOINT"] == "http://minio:9000", "\(name)")
            let bucket = try #require(environment["S3_BUCKET"], "\(name) names no bucket")
            #expect(made.contains("mc mb --ignore-existing splash/\(bucket)"), "\(name)'s bucket \(bucket) is not the one minio-bucket makes")
            let dependencies = services[name]?["depends_on"] as? [String: [String: String]]
            #expect(dependencies?["minio-bucket"]?["condition"] == "service_completed_successfully", "\(name) does not wait for its bucket")
            #expect(dependencies?["kafka-topics"] != nil && dependencies?["postgres"] != nil, "\(name) lost the shared dependencies")
            #expect(services[name]?["volumes"] == nil, "\(name) still mounts a volume")
        }
    }

    @Test func topicsFileMirrorsTheCatalog() throws {
        let lines = try Repository.text("deploy/kafka/topics.txt").split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        let declared = lines.map { $0.split(separator: " ").map(String.init) }
        let expected = TopicCatalog.all.map { [$0.name, String($0.partitions), String($0.retentionMilliseconds), $0.cleanupPolicy.rawValue] }
        #expect(declared == expected)
    }

    @Test func everyServiceExecutableHasAComposeServiceAndALocalStackEntry() throws {
        let executables = try Repository.serviceExecutables()
        // The tools (the CLI, the simulator) are declared directly; services with service(…).
        #expect(
            try Repository.directlyDeclaredExecutables() == ["splash", "tracking-simulator"],
            "service executables must be declared with service(…)"
        )
        #expect(Set(executables) == Set(serviceConfigurations.keys), "list each service's configuration type in ServiceConfigurations.swift")
        for executable in executables {
            let service = try #require(services[executable], "no compose service for \(executable)")
            let build = service["build"] as? [String: Any]
            #expect(build?["dockerfile"] as? String == "deploy/Dockerfile")
            #expect((build?["args"] as? [String: String])?["EXECUTABLE"] == executable)
            #expect(ServiceCatalog.service(named: executable) != nil, "splash up does not know \(executable)")
        }
        // Nothing in compose builds an executable that does not exist (the simulator is a tool,
        // run behind the `simulator` profile).
        for (name, service) in services {
            if let arguments = (service["build"] as? [String: Any])?["args"] as? [String: String], let executable = arguments["EXECUTABLE"] {
                #expect(
                    executables.contains(executable) || executable == "tracking-simulator",
                    "compose service \(name) builds unknown executable \(executable)"
                )
            }
        }
        #expect(services["tracking-simulator"]?["profiles"] as? [String] == ["simulator"], "the simulator runs only when asked")
    }

    @Test func everyServiceConfigurationLoadsFromItsComposeEnvironment() throws {
        for (executable, configuration) in serviceConfigurations {
            let environment = try loadableEnvironment(of: executable)
            do {
                _ = try configuration.init(from: ConfigurationReader(environment))
            } catch {
                Issue.record("compose service \(executable): \(error)")
            }
        }
    }

    @Test func everySecretComposeRequiresIsInTheEnvironmentTemplate() throws {
        let text = try Repository.text("docker-compose.yml")
        let pattern = try NSRegularExpression(pattern: #"\$\{([A-Z0-9_]+):\?"#)
        let required = Set(
            pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                Range($0.range(at: 1), in: text).map { String(text[$0]) }
            }
        )
        let template = Set(
            try Repository.text("deploy/compose.env.example").split(separator: "\n")
                .filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: "=").first.map(String.init) }
        )
        #expect(!required.isEmpty)
        #expect(required.subtracting(template).isEmpty, "missing from deploy/compose.env.example: \(required.subtracting(template).sorted())")
    }

    /// A compose value with `${NAME:-default}` resolved to its default and `${NAME:?…}` to a
    /// placeholder secret (the operator's .env provides it).
    static func interpolated(_ value: String) -> String {
        let esGeneratedSecrets = Set(
            ((try? Repository.text("deploy/compose.env.example")) ?? "").split(separator: "\n")
                .filter { $0.hasSuffix("=generate-es256") }.map { String($0.dropLast("=generate-es256".count)) }
        )
        guard value.contains("${") else { return value }
        var result = value
        while let start = result.range(of: "${"), let end = result.range(of: "}", range: start.upperBound..<result.endIndex) {
            let expression = result[start.upperBound..<end.lowerBound]
            let replacement: String
            if let separator = expression.range(of: ":-") {
                replacement = String(expression[separator.upperBound...])
            } else if esGeneratedSecrets.contains(String(expression.prefix { $0 != ":" })) {
                // What `make compose-env` writes for `=generate-es256`: a PEM with \n escapes.
                replacement = SigningKey.generate().pem.replacingOccurrences(of: "\n", with: "\\n")
            } else {
                // What `make compose-env` writes for `=generate`: 32 random bytes in hex.
                replacement = String(repeating: "5e", count: 32)
            }
            result.replaceSubrange(start.lowerBound..<end.upperBound, with: replacement)
        }
        return result
    }
}
