import Contracts
import Foundation
import Identity
import LocalStack
import ServiceKit
import Testing
import Yams

/// `deploy/kubernetes`, checked without a cluster: the core resources against Kubernetes' own
/// schemas (kubernetes-validate, from PyPI, strict), every kustomization's paths, the probes and
/// drain of every Deployment, each service's configuration loaded from what its pods get, the
/// topics Strimzi makes against the catalog, and the network policies' one way in.
@Suite("Kubernetes manifests")
struct KubernetesTests {
    static let directory = "deploy/kubernetes"

    /// Every YAML document of `path`, as objects.
    static func documents(_ path: String) throws -> [[String: Any]] {
        try Yams.load_all(yaml: try Repository.text("\(directory)/\(path)")).compactMap { $0 as? [String: Any] }
    }

    /// The base's resources, by kind and name.
    static func base() throws -> [String: [String: [String: Any]]] {
        let kustomization = try #require(try documents("base/kustomization.yaml").first)
        var resources: [String: [String: [String: Any]]] = [:]
        for file in kustomization["resources"] as? [String] ?? [] {
            for document in try documents("base/\(file)") {
                let kind = document["kind"] as? String ?? ""
                let name = (document["metadata"] as? [String: Any])?["name"] as? String ?? ""
                resources[kind, default: [:]][name] = document
            }
        }
        return resources
    }

    @Test func theCoreResourcesPassKubernetesOwnSchemasStrictly() async throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Repository.root.appendingPathComponent("\(Self.directory)/base").path)
            .filter { $0.hasSuffix(".yaml") && $0 != "kustomization.yaml" }.sorted()
        #expect(files.count >= 10)
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-m", "kubernetes_validate", "--strict", "--quiet"]
                + files.map { Repository.root.appendingPathComponent("\(Self.directory)/base/\($0)").path }
        )
        .runToCompletion()
        #expect(!output.contains("ERROR"), "\(output)")
    }

    @Test func everyPathAKustomizationNamesExists() throws {
        for path in ["base", "components/keda", "overlays/dev", "overlays/prod"] {
            let kustomization = try #require(try Self.documents("\(path)/kustomization.yaml").first, "\(path)")
            let named = (kustomization["resources"] as? [String] ?? []) + (kustomization["components"] as? [String] ?? [])
            #expect(!named.isEmpty || kustomization["patches"] != nil, "\(path) names nothing")
            for target in named {
                let resolved = Repository.root.appendingPathComponent("\(Self.directory)/\(path)/\(target)").standardizedFileURL.path
                #expect(FileManager.default.fileExists(atPath: resolved), "\(path) names \(target), which does not exist")
            }
        }
        // The example the Secret is made from (the real one is never committed).
        #expect(FileManager.default.fileExists(atPath: Repository.root.appendingPathComponent("\(Self.directory)/base/secrets.env.example").path))
    }

    @Test func everyDeploymentProbesDrainsAndHasItsBudgetAndService() throws {
        let resources = try Self.base()
        let deployments = try #require(resources["Deployment"])
        let executables = try Repository.serviceExecutables()
        #expect(Set(deployments.keys) == Set(executables + ["edit-render-worker"]), "a Deployment per service, and the render workers")
        let grace = try #require(try Self.documents("base/config.yaml").first?["data"] as? [String: String])["SHUTDOWN_GRACE"]
        let graceSeconds = try #require(Int(grace?.dropLast() ?? ""))
        for (name, deployment) in deployments {
            let pod = try #require(((deployment["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any])
            let container = try #require((pod["containers"] as? [[String: Any]])?.first)
            #expect(((container["readinessProbe"] as? [String: Any])?["httpGet"] as? [String: Any])?["path"] as? String == "/readyz", "\(name)")
            #expect(((container["livenessProbe"] as? [String: Any])?["httpGet"] as? [String: Any])?["path"] as? String == "/healthz", "\(name)")
            // Out of the endpoints, then the service's own drain, within the pod's grace.
            #expect((container["lifecycle"] as? [String: Any])?["preStop"] != nil, "\(name)")
            #expect((pod["terminationGracePeriodSeconds"] as? Int ?? 30) >= graceSeconds + 10, "\(name)")
            let image = container["image"] as? String ?? ""
            #expect(image.hasPrefix("splash/\(name == "edit-render-worker" ? "edit-render" : name):"), "\(name): \(image)")
            #expect(resources["PodDisruptionBudget"]?[name] != nil, "\(name) has no PodDisruptionBudget")
            if name != "edit-render-worker" { #expect(resources["Service"]?[name] != nil, "\(name) has no Service") }
        }
    }

    /// What a pod of `deployment` gets as its environment: the ConfigMap, its own `env`, and the
    /// Secret's keys with the example's values (a real signing key for auth's).
    static func environment(
        of deployment: [String: Any],
        config: [String: String],
        secrets: [String: String]
    ) throws -> (all: [String: String], own: [String]) {
        let pod = try #require(((deployment["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any])
        let container = try #require((pod["containers"] as? [[String: Any]])?.first)
        var environment = config
        var own: [String] = []
        for entry in container["env"] as? [[String: Any]] ?? [] {
            let name = try #require(entry["name"] as? String)
            own.append(name)
            if let value = entry["value"] as? String {
                environment[name] = value
            } else if let key = ((entry["valueFrom"] as? [String: Any])?["secretKeyRef"] as? [String: Any])?["key"] as? String {
                let value = try #require(secrets[key], "the Secret has no \(key)")
                if !value.isEmpty { environment[name] = value }
            }
        }
        return (environment, own)
    }

    @Test func eachServiceLoadsItsConfigurationFromWhatItsPodsGetAndReadsEveryVariableSetForIt() throws {
        let resources = try Self.base()
        let config = try #require(resources["ConfigMap"]?["splash-config"]?["data"] as? [String: String])
        var secrets: [String: String] = [:]
        for line in try Repository.text("\(Self.directory)/base/secrets.env.example").split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            secrets[String(parts[0])] = String(parts[1])
        }
        secrets["AUTH_JWT_KEY"] = SigningKey.generate().pem
        var readBySomeService: Set<String> = []
        for (name, deployment) in try #require(resources["Deployment"]) {
            let executable = name == "edit-render-worker" ? "edit-render" : name
            let configuration = try #require(serviceConfigurations[executable])
            let (environment, own) = try Self.environment(of: deployment, config: config, secrets: secrets)
            let log = ConfigurationReadLog()
            if case .failure(let failure) = DocumentationTests.loadConfiguration(
                configuration,
                executable: executable,
                environment: environment,
                log: log
            ) {
                Issue.record("\(name) does not load from its pods' environment: \(failure.message)")
            }
            for variable in own {
                #expect(log.namesRead.contains(variable), "\(name) sets \(variable), which \(executable) does not read")
            }
            readBySomeService.formUnion(log.namesRead)
        }
        for key in config.keys.sorted() {
            #expect(readBySomeService.contains(key), "splash-config's \(key) is read by no service")
        }
    }

    @Test func strimziMakesEveryTopicOfTheCatalog() throws {
        let topics = try Self.documents("operators/strimzi-topics.yaml")
        var declared: [String: (partitions: Int, retention: String, policy: String)] = [:]
        for topic in topics {
            #expect(topic["kind"] as? String == "KafkaTopic")
            let spec = try #require(topic["spec"] as? [String: Any])
            let settings = try #require(spec["config"] as? [String: Any])
            declared[try #require(spec["topicName"] as? String)] = (
                spec["partitions"] as? Int ?? 0, "\(settings["retention.ms"] ?? "")", "\(settings["cleanup.policy"] ?? "")"
            )
        }
        #expect(Set(declared.keys) == Set(TopicCatalog.all.map(\.name)))
        for topic in TopicCatalog.all {
            #expect(declared[topic.name]?.partitions == topic.partitions, "\(topic.name)")
            #expect(declared[topic.name]?.retention == String(topic.retentionMilliseconds), "\(topic.name)")
            #expect(declared[topic.name]?.policy == topic.cleanupPolicy.rawValue, "\(topic.name)")
        }
        // The workers' autoscalers stop where render.jobs' partitions do.
        let partitions = try #require(TopicCatalog.all.first { $0.name == "render.jobs" }?.partitions)
        let cpu = try #require(try Self.base()["HorizontalPodAutoscaler"]?["edit-render-worker"]?["spec"] as? [String: Any])
        #expect(cpu["maxReplicas"] as? Int == partitions)
        let keda = try #require(try Self.documents("components/keda/scaled-object.yaml").first?["spec"] as? [String: Any])
        #expect(keda["maxReplicaCount"] as? Int == partitions)
        let trigger = try #require((keda["triggers"] as? [[String: Any]])?.first?["metadata"] as? [String: String])
        #expect(trigger["topic"] == "render.jobs" && trigger["consumerGroup"] == "edit-render-workers")
    }

    @Test func onlyTheGatewayIsReachableFromOutside() throws {
        let policies = try #require(try Self.base()["NetworkPolicy"])
        let deny = try #require(policies["default-deny-ingress"]?["spec"] as? [String: Any])
        #expect((deny["podSelector"] as? [String: Any])?.isEmpty == true && deny["ingress"] == nil, "ingress denied to every pod unless allowed")
        for (name, policy) in policies where name != "default-deny-ingress" {
            let spec = try #require(policy["spec"] as? [String: Any])
            let selected = ((spec["podSelector"] as? [String: Any])?["matchLabels"] as? [String: String])?["app.kubernetes.io/name"]
            for rule in spec["ingress"] as? [[String: Any]] ?? [] where rule["from"] == nil {
                #expect(selected == "gateway", "\(name) lets anyone in to \(selected ?? "several services")")
            }
        }
        let ingress = try #require(try Self.base()["Ingress"]?["gateway"]?["spec"] as? [String: Any])
        #expect("\(ingress)".contains("gateway") && !"\(ingress)".contains("auth"))
    }
}
