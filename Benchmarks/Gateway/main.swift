import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Identity
import Kafka
import LocalStack
import Logging
import PlainWebSocket
import ServiceKit
import Synchronization
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

// The gateway's figures, each beside its baseline in the same run (`make bench-gateway`):
//  1. an authenticated GET (auth's GET /auth/v1/user, which reads the user under row-level
//     security; or, with `--request put`, a PUT of /auth/v1/user with a JSON body, which auth
//     reads and refuses with a 403, as it may not change app_metadata: a call with a body, at
//     little cost to auth) with wrk: straight to auth, through the gateway, and through nginx (Debian's) as a
//     plain reverse proxy — requests per second, latency percentiles, and the CPU time auth and
//     the proxy spent per request (from /proc; steadier than latency on a shared machine). The
//     three ways take turns in short slices, and each way's percentiles are read over all the
//     requests of its slices (wrk's histograms, merged): on two shared cores the machine has slow
//     spells of seconds, which a few long runs per way catch on one way and not another;
//  2. N WebSocket clients on one gateway subscribed to `profiles`: the delay from publishing a
//     profile event to Kafka to each client receiving it (p50, p99, max). This gateway polls the
//     embedded broker every 10 ms (see `startGateway`).
// auth and the gateway run as their own processes (release builds) against the test support's
// Postgres and embedded broker; wrk, nginx and the WebSocket clients share the same cores.
/// Each way's measured time at each load, in slices of `--slice` seconds.
let seconds = BenchmarkArguments.integer("--seconds", default: 60)
let sliceSeconds = BenchmarkArguments.integer("--slice", default: 2)
let slices = max(1, seconds / sliceSeconds)
/// wrk's connections, one run each: 32 saturate the two cores; at 4 the cores are already busy
/// (auth and Postgres spend over 1 ms of CPU on each request); with 1 nothing queues, and the
/// latency a proxy adds is its own.
let loads = BenchmarkArguments.integers("--loads", default: [32, 4, 1])
let socketCount = BenchmarkArguments.integer("--sockets", default: 1_000)
let broadcasts = BenchmarkArguments.integer("--broadcasts", default: 5)
/// The proxied gateway's EVENT_LOOPS; 0 (the default): one per core, as a gateway starts unless
/// told otherwise. nginx runs one worker process.
let gatewayEventLoops = BenchmarkArguments.integer("--gateway-event-loops", default: 0)
/// Another gateway executable beside the benchmark's (a build of an earlier commit, copied there
/// under another name), measured as a fourth way: a change's effect on the proxy's cost, with
/// both builds taking turns in the same run.
let comparedGateway = BenchmarkArguments.string("--compare-gateway")
/// The compared gateway's EVENT_LOOPS (by default the same as the other's): with the same build
/// under both names, how the number of loops changes the cost.
let comparedEventLoops = BenchmarkArguments.integer("--compare-event-loops", default: gatewayEventLoops)
/// Settings for the compared gateway only, `NAME=VALUE[,NAME=VALUE…]`: the same build with one
/// feature turned off or set otherwise.
let comparedSettings: [String: String] = Dictionary(
    (BenchmarkArguments.string("--compare-setting") ?? "").split(separator: ",").compactMap { pair in
        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }
) { _, last in last }
/// `get` (the default) or `put`: which call wrk makes (see above).
let requestKind = BenchmarkArguments.string("--request") ?? "get"
guard ["get", "put"].contains(requestKind) else { fatalError("--request is get or put") }
/// wrk's Lua for the calls other than a GET.
let requestScript: String? =
    requestKind == "put"
    ? #"wrk.method = "PUT"; wrk.body = '{"app_metadata":{"role":"admin"},"data":{"note":"\#(String(repeating: "x", count: 512))"}}'; wrk.headers["Content-Type"] = "application/json""#
    : nil
var logger = Logger(label: "bench")
logger.logLevel = .error

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

// MARK: The stack

let database = try await TestPostgres.shared.makeDatabase()
let (_, databaseURL) = try await database.makeServiceRole(schema: "auth", password: "bench")
let kafka = try await TestKafka.shared.running()
let issuer = "http://localhost:8080/auth/v1"
let unlimited = "100000000/1m"
let common = [
    "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
    "LOG_LEVEL": "error",
]
let auth = try await ServiceProcess(
    "auth",
    environment: common.merging([
        "DATABASE_URL": databaseURL, "DATABASE_POOL_SIZE": "16",
        "AUTH_JWT_KEY": SigningKey.generate().pem, "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4",
        "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
        "AUTH_RATE_LIMIT_TOKEN": unlimited, "AUTH_RATE_LIMIT_SIGNUP": unlimited, "AUTH_RATE_LIMIT_FAILED_SIGN_INS": unlimited,
    ]) { _, new in new }
)
/// A gateway in front of auth. The embedded broker answers a consumer's fetch only when its
/// wait is over, so a gateway measured for delivery latency polls every 10 ms; one measured for
/// its cost per request runs with the default 100 ms, as against a real broker (which answers as
/// soon as records arrive, so the wait costs no latency there), lest the embedded broker's polling
/// (about 30 ms of CPU per second at 10 ms) be counted as the proxy's.
func startGateway(
    _ executable: String = "gateway",
    fetchMaxWait: String,
    eventLoops: Int = 0,
    settings: [String: String] = [:]
) async throws -> ServiceProcess {
    var environment = common.merging([
        "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_JWT_ISSUER": issuer,
        "GATEWAY_RATE_LIMIT_AUTH": unlimited, "GATEWAY_RATE_LIMIT_REALTIME": unlimited,
        "GATEWAY_REALTIME_MAX_CONNECTIONS": String(socketCount * 2),
        "KAFKA_FETCH_MAX_WAIT": fetchMaxWait,
    ]) { _, new in new }
    if eventLoops > 0 { environment["EVENT_LOOPS"] = String(eventLoops) }
    return try await ServiceProcess(executable, environment: environment.merging(settings) { _, new in new })
}
let gateway = try await startGateway(fetchMaxWait: "100ms", eventLoops: gatewayEventLoops)
let compared: ServiceProcess? =
    if let comparedGateway {
        try await startGateway(comparedGateway, fetchMaxWait: "100ms", eventLoops: comparedEventLoops, settings: comparedSettings)
    } else {
        nil
    }

// nginx as a plain reverse proxy to auth: keep-alive upstream connections, forwarding headers.
let nginxDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-nginx-\(getpid())")
try FileManager.default.createDirectory(at: nginxDirectory, withIntermediateDirectories: true)
let nginxPort = freePort()
try """
user root;
worker_processes 1;
pid \(nginxDirectory.path)/nginx.pid;
error_log \(nginxDirectory.path)/error.log error;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path \(nginxDirectory.path)/body;
    proxy_temp_path \(nginxDirectory.path)/proxy;
    fastcgi_temp_path \(nginxDirectory.path)/fastcgi;
    uwsgi_temp_path \(nginxDirectory.path)/uwsgi;
    scgi_temp_path \(nginxDirectory.path)/scgi;
    upstream auth { server 127.0.0.1:\(auth.port); keepalive 64; }
    server {
        listen 127.0.0.1:\(nginxPort);
        location / {
            proxy_pass http://auth;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }
    }
}
""".write(to: nginxDirectory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
let nginxBinary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
guard let nginxBinary else { fatalError("nginx is not installed; make bench-gateway installs it") }
let nginx = ProcessCommand(
    URL(fileURLWithPath: nginxBinary),
    ["-p", nginxDirectory.path, "-c", nginxDirectory.appendingPathComponent("nginx.conf").path, "-g", "daemon off;"]
).makeProcess()
try nginx.run()
try await waitUntilReady("nginx", timeout: .seconds(10)) {
    (try? await HTTPClient.shared.get(url: "http://127.0.0.1:\(nginxPort)/healthz").get().status.code) == 200
}

// One user, whose access token every request carries.
var signUp = HTTPClientRequest(url: "\(auth.baseURL)/auth/v1/signup")
signUp.method = .POST
signUp.headers.add(name: "Content-Type", value: "application/json")
signUp.body = .bytes(
    Data(
        #"{"email":"bench-\#(UUID().uuidString.prefix(8))@example.com","password":"correct horse 1","data":{"username":"bench_\#(UUID().uuidString.prefix(6).lowercased())"}}"#
            .utf8
    )
)
let session =
    try JSONSerialization.jsonObject(
        with: Data(buffer: try await HTTPClient.shared.execute(signUp, timeout: .seconds(10)).body.collect(upTo: 1 << 20))
    ) as! [String: Any]
let token = session["access_token"] as! String

// MARK: 1. wrk

let wrkHeaders = ["Authorization: Bearer \(token)", "apikey: anon-key"]
let nginxWorkers = ProcessCPU.children(of: nginx.processIdentifier)
/// Each way to the same GET, and the processes whose CPU time is that way's own: the proxy's.
let targets: [(name: String, url: String, proxy: [pid_t])] =
    [
        ("auth directly", "\(auth.baseURL)/auth/v1/user", []),
        ("through gateway", "\(gateway.baseURL)/auth/v1/user", [gateway.pid]),
        ("through nginx", "http://127.0.0.1:\(nginxPort)/auth/v1/user", nginxWorkers),
    ] + (compared.map { [("through \($0.name)", "\($0.baseURL)/auth/v1/user", [$0.pid])] } ?? [])
/// One way's wrk slices at one load, added up: every request's latency, and the CPU time auth,
/// the proxy and the gateway spent meanwhile.
struct Way {
    var latency = LatencyHistogram()
    var seconds = 0.0
    var authCPU = 0.0, proxyCPU = 0.0, gatewayCPU = 0.0
    /// Each slice's latencies, in the order the slices ran.
    var slices: [LatencyHistogram] = []
    var errors: [String] = []

    var requestsPerSecond: Double { Double(latency.count) / seconds }
    var authMicroseconds: Double { authCPU / Double(latency.count) * 1e6 }
    var proxyMicroseconds: Double { proxyCPU / Double(latency.count) * 1e6 }
    /// The gateway's CPU time per second: its cost at rest when the way bypasses it.
    var gatewayMillisecondsPerSecond: Double { gatewayCPU / seconds * 1e3 }
}
func cpuSeconds(_ pids: [pid_t]) -> Double { pids.compactMap(ProcessCPU.seconds).reduce(0, +) }
var ways: [String: Way] = [:]
for load in loads {
    for target in targets {
        // Warm-up: connections, pools, caches.
        _ = try await Wrk.run(target.url, seconds: 2, connections: load, headers: wrkHeaders, requests: requestScript)
    }
    // Short slices, the ways taking turns and each slice starting with the next way, so that a slow
    // spell of the machine (they last seconds) falls on every way alike.
    for slice in 0..<slices {
        for index in targets.indices {
            let target = targets[(index + slice) % targets.count]
            let (authBefore, proxyBefore, gatewayBefore) = (cpuSeconds([auth.pid]), cpuSeconds(target.proxy), cpuSeconds([gateway.pid]))
            let result = try await Wrk.run(target.url, seconds: sliceSeconds, connections: load, headers: wrkHeaders, requests: requestScript)
            ways["\(target.name) c\(load)", default: Way()].add(
                result,
                seconds: sliceSeconds,
                authCPU: cpuSeconds([auth.pid]) - authBefore,
                proxyCPU: cpuSeconds(target.proxy) - proxyBefore,
                gatewayCPU: cpuSeconds([gateway.pid]) - gatewayBefore
            )
        }
    }
    for target in targets {
        let way = ways["\(target.name) c\(load)"]!
        print(
            "c\(load) \(target.name), p99 per slice: \(way.slices.map { format($0.percentile(99), 1) }.joined(separator: " ")) ms\(way.errors.first.map { " — \($0)" } ?? "")"
        )
    }
}
extension Way {
    mutating func add(_ result: Wrk.Result, seconds: Int, authCPU: Double, proxyCPU: Double, gatewayCPU: Double) {
        latency.merge(result.latency)
        // wrk's own running time (a little over the slice's).
        self.seconds += result.requestsPerSecond > 0 ? Double(result.latency.count) / result.requestsPerSecond : Double(seconds)
        self.authCPU += authCPU
        self.proxyCPU += proxyCPU
        self.gatewayCPU += gatewayCPU
        slices.append(result.latency)
        if let error = result.errors { errors.append(error) }
    }
}

// MARK: 2. Broadcast to N WebSocket clients

await gateway.stop()
await compared?.stop()
let realtimeGateway = try await startGateway(fetchMaxWait: "10ms")

final class Arrivals: Sendable {
    let times = Mutex<[String: [ContinuousClock.Instant]]>([:])
    let subscribed = Atomic<Int>(0)
}
let arrivals = Arrivals()
let socketTasks = (0..<socketCount).map { _ in
    Task {
        _ = try? await PlainWebSocketClient.run(
            url: "ws://127.0.0.1:\(realtimeGateway.port)/v1/realtime?channels=profiles",
            headers: [("Authorization", "Bearer \(token)")]
        ) { text in
            let now = ContinuousClock.now
            if text.contains(#""op":"subscribed""#) {
                arrivals.subscribed.add(1, ordering: .relaxed)
                return
            }
            guard let range = text.range(of: #""id":""#) else { return }
            let id = String(text[range.upperBound...].prefix(36))
            arrivals.times.withLock { $0[id, default: []].append(now) }
        }
    }
}
try await waitUntilReady("\(socketCount) subscribed sockets", timeout: .seconds(120)) {
    arrivals.subscribed.load(ordering: .relaxed) >= socketCount
}

var producerConfiguration = KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers, clientID: "bench-publisher")
producerConfiguration.linger = .zero
let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
var delays: [Double] = []
var perEvent: [String] = []
try await withRunningServices([producer]) {
    for index in 0..<broadcasts {
        try await Task.sleep(for: .seconds(1))
        let envelope = try EventEnvelope(
            ProfileUpdated(userId: UUID(), username: "broadcast_\(index)", avatarUrl: nil, changed: [.username], updatedAt: Date()),
            source: "/splash/bench"
        )
        let id = envelope.id.uuidString.lowercased()
        let sent = ContinuousClock.now
        try await producer.send(envelope.record(topic: TopicCatalog.authUsers.name))
        try await waitUntilReady("broadcast \(index) delivered", timeout: .seconds(30)) {
            arrivals.times.withLock { $0[id]?.count ?? 0 } >= socketCount
        }
        let received = arrivals.times.withLock { $0[id]! }.map { (($0 - sent) / .microseconds(1)) / 1_000 }.sorted()
        delays += received
        perEvent.append(
            "event \(index + 1): \(received.count) clients, p50 \(format(received[received.count / 2])) ms, p99 \(format(received[Int(Double(received.count) * 0.99)])) ms, max \(format(received.last!)) ms"
        )
    }
}
for task in socketTasks { task.cancel() }

// MARK: Report

let allWays = ways
func report(_ load: Int, _ note: String) -> String {
    func way(_ name: String) -> Way { allWays["\(name) c\(load)"]! }
    let direct = way("auth directly")
    func line(_ label: String, _ name: String) -> String {
        let measured = way(name)
        let proxy =
            name == "auth directly"
            ? " (gateway at rest meanwhile: \(format(measured.gatewayMillisecondsPerSecond, 1)) ms CPU/s)"
            : ", proxy \(format(measured.proxyMicroseconds, 0)) µs"
        return
            "  \(label)\(format(measured.requestsPerSecond, 0)) req/s  p50 \(format(measured.latency.percentile(50))) ms  p90 \(format(measured.latency.percentile(90))) ms  p99 \(format(measured.latency.percentile(99))) ms  CPU per request: auth \(format(measured.authMicroseconds, 0)) µs\(proxy)"
    }
    func added(_ name: String) -> String {
        let proxied = way(name)
        // With how sure each figure is: a 95 % interval by the bootstrap over the rounds of slices
        // (the same draws on every run, for the same measurements).
        var random = SeededRandom(state: 20_261_123)
        let (proxiedSlices, directSlices) = (SlicedLatencies(proxied.slices), SlicedLatencies(direct.slices))
        let added = { (percent: Double) in
            let (added, interval) = SlicedLatencies.addedPercentile(percent, proxied: proxiedSlices, direct: directSlices, using: &random)
            return "\(format(added)) ms (95 % interval \(format(interval.lowerBound))…\(format(interval.upperBound)))"
        }
        return "throughput \(format(proxied.requestsPerSecond / direct.requestsPerSecond)), added p50 \(added(50)), added p99 \(added(99))"
    }
    return """
        wrk -t\(min(2, load)) -c\(load) (\(note)), \(slices) interleaved slices of \(sliceSeconds) s per way, percentiles over all their requests:
        \(line("auth directly    ", "auth directly"))
        \(line("through gateway  ", "through gateway"))
        \(line("through nginx    ", "through nginx"))
          gateway/direct \(added("through gateway")) — goals: throughput ≥ 0.7, added p99 ≤ 2 ms
          nginx/direct   \(added("through nginx"))\(compared.map { "\n\(line("through \($0.name)  ", "through \($0.name)"))\n  \($0.name)/direct \(added("through \($0.name)"))" } ?? "")
        """
}
delays.sort()
func loopsText(_ loops: Int) -> String { loops > 0 ? "EVENT_LOOPS=\(loops)" : "an event loop per core" }
print(
    """

    gateway benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores; \(requestKind == "get" ? "authenticated GET /auth/v1/user (auth reads the user from Postgres)" : "authenticated PUT /auth/v1/user with a 0.5 KiB JSON body (auth reads it and answers 403)"); the gateway with KAFKA_FETCH_MAX_WAIT=100ms and \(loopsText(gatewayEventLoops))\(comparedGateway.map { ", \($0) with \(loopsText(comparedEventLoops))\(comparedSettings.isEmpty ? "" : " and " + comparedSettings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))" } ?? ""), nginx with one worker process
    \(loads.map { report($0, $0 >= 16 ? "saturating: the CPU is shared by wrk, auth, Postgres and the proxy" : $0 == 1 ? "one connection: nothing queues" : "moderate: the cores are already busy") }.joined(separator: "\n"))
    broadcast to \(socketCount) WebSocket clients on one gateway (Kafka publish → client receives; KAFKA_FETCH_MAX_WAIT=10ms), \(broadcasts) events:
      \(perEvent.joined(separator: "\n  "))
      all: p50 \(format(delays[delays.count / 2])) ms, p99 \(format(delays[Int(Double(delays.count) * 0.99)])) ms, max \(format(delays.last!)) ms
    """
)
kill(nginx.processIdentifier, SIGQUIT)
try? FileManager.default.removeItem(at: nginxDirectory)
await realtimeGateway.stop()
await auth.stop()
exit(0)
