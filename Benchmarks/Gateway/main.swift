import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Identity
import Kafka
import LocalStack
import Logging
import ServiceKit
import Synchronization
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

// The gateway's figures, each beside its baseline in the same run (`make bench-gateway`):
//  1. an authenticated GET (auth's GET /auth/v1/user, which reads the user under row-level
//     security) with wrk: straight to auth, through the gateway, and through nginx (Debian's) as a
//     plain reverse proxy — requests per second, latency percentiles, and the CPU time auth and
//     the proxy spent per request (from /proc; steadier than latency on a shared machine);
//  2. N WebSocket clients on one gateway subscribed to `profiles`: the delay from publishing a
//     profile event to Kafka to each client receiving it (p50, p99, max). This gateway polls the
//     embedded broker every 10 ms (see `startGateway`).
// auth and the gateway run as their own processes (release builds) against the test support's
// Postgres and embedded broker; wrk, nginx and the WebSocket clients share the same cores.
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
/// wrk's connections, one run each: 32 saturate the two cores; at 4 the cores are already busy
/// (auth and Postgres spend over 1 ms of CPU on each request); with 1 nothing queues, and the
/// latency a proxy adds is its own.
let loads = BenchmarkArguments.integers("--loads", default: [32, 4, 1])
let socketCount = BenchmarkArguments.integer("--sockets", default: 1_000)
let broadcasts = BenchmarkArguments.integer("--broadcasts", default: 5)
let rounds = BenchmarkArguments.integer("--rounds", default: 3)
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
let auth = try await ServiceProcess("auth", environment: common.merging([
    "DATABASE_URL": databaseURL, "DATABASE_POOL_SIZE": "16",
    "AUTH_JWT_KEY": SigningKey.generate().pem, "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4",
    "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
    "AUTH_RATE_LIMIT_TOKEN": unlimited, "AUTH_RATE_LIMIT_SIGNUP": unlimited, "AUTH_RATE_LIMIT_FAILED_SIGN_INS": unlimited,
]) { _, new in new })
/// A gateway in front of auth. The embedded broker answers a consumer's fetch only when its
/// wait is over, so a gateway measured for delivery latency polls every 10 ms; one measured for
/// its cost per request runs with the default 100 ms, as against a real broker (which answers as
/// soon as records arrive, so the wait costs no latency there), lest the embedded broker's polling
/// (about 30 ms of CPU per second at 10 ms) be counted as the proxy's.
func startGateway(fetchMaxWait: String) async throws -> ServiceProcess {
    try await ServiceProcess("gateway", environment: common.merging([
        "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_JWT_ISSUER": issuer,
        "GATEWAY_RATE_LIMIT_AUTH": unlimited, "GATEWAY_RATE_LIMIT_REALTIME": unlimited,
        "GATEWAY_REALTIME_MAX_CONNECTIONS": String(socketCount * 2),
        "KAFKA_FETCH_MAX_WAIT": fetchMaxWait,
    ]) { _, new in new })
}
let gateway = try await startGateway(fetchMaxWait: "100ms")

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
let nginx = ProcessCommand(URL(fileURLWithPath: nginxBinary), ["-p", nginxDirectory.path, "-c", nginxDirectory.appendingPathComponent("nginx.conf").path, "-g", "daemon off;"]).makeProcess()
try ProcessCommand.start(nginx)
try await waitUntilReady("nginx", timeout: .seconds(10)) {
    (try? await HTTPClient.shared.get(url: "http://127.0.0.1:\(nginxPort)/healthz").get().status.code) == 200
}

// One user, whose access token every request carries.
var signUp = HTTPClientRequest(url: "\(auth.baseURL)/auth/v1/signup")
signUp.method = .POST
signUp.headers.add(name: "Content-Type", value: "application/json")
signUp.body = .bytes(Data(#"{"email":"bench-\#(UUID().uuidString.prefix(8))@example.com","password":"correct horse 1","data":{"username":"bench_\#(UUID().uuidString.prefix(6).lowercased())"}}"#.utf8))
let session = try JSONSerialization.jsonObject(with: Data(buffer: try await HTTPClient.shared.execute(signUp, timeout: .seconds(10)).body.collect(upTo: 1 << 20))) as! [String: Any]
let token = session["access_token"] as! String

// MARK: 1. wrk

let wrkHeaders = ["Authorization: Bearer \(token)", "apikey: anon-key"]
let nginxWorkers = ProcessCPU.children(of: nginx.processIdentifier)
/// Each way to the same GET, and the processes whose CPU time is that way's own: the proxy's.
let targets: [(name: String, url: String, proxy: [pid_t])] = [
    ("auth directly", "\(auth.baseURL)/auth/v1/user", []),
    ("through gateway", "\(gateway.baseURL)/auth/v1/user", [gateway.pid]),
    ("through nginx", "http://127.0.0.1:\(nginxPort)/auth/v1/user", nginxWorkers),
]
/// One wrk run, and the CPU time auth and the proxy spent per request during it.
struct Run {
    var wrk: Wrk.Result
    var authMicroseconds: Double
    var proxyMicroseconds: Double
    /// The gateway's CPU time per second of the run: its cost at rest when the run bypasses it.
    var gatewayMillisecondsPerSecond: Double
}
func cpuSeconds(_ pids: [pid_t]) -> Double { pids.compactMap(ProcessCPU.seconds).reduce(0, +) }
var runs: [String: [Run]] = [:]
for load in loads {
    // Rounds interleave the three ways, so a slow spell of the machine hits them alike.
    for round in 1...rounds {
        for target in targets {
            _ = try await Wrk.run(target.url, seconds: 2, connections: load, headers: wrkHeaders)  // warm-up: connections, pools, caches
            let (authBefore, proxyBefore, gatewayBefore) = (cpuSeconds([auth.pid]), cpuSeconds(target.proxy), cpuSeconds([gateway.pid]))
            let result = try await Wrk.run(target.url, seconds: seconds, connections: load, headers: wrkHeaders)
            let served = result.requestsPerSecond * Double(seconds)
            let run = Run(
                wrk: result,
                authMicroseconds: (cpuSeconds([auth.pid]) - authBefore) / served * 1e6,
                proxyMicroseconds: (cpuSeconds(target.proxy) - proxyBefore) / served * 1e6,
                gatewayMillisecondsPerSecond: (cpuSeconds([gateway.pid]) - gatewayBefore) / Double(seconds) * 1e3
            )
            runs["\(target.name) c\(load)", default: []].append(run)
            print("c\(load) round \(round) \(target.name): \(format(result.requestsPerSecond, 0)) req/s, p50 \(format(result.p50)) ms, p90 \(format(result.p90)) ms, p99 \(format(result.p99)) ms, CPU per request: auth \(format(run.authMicroseconds, 0)) µs, proxy \(format(run.proxyMicroseconds, 0)) µs\(result.errors.map { " — \($0)" } ?? "")")
        }
    }
}

// MARK: 2. Broadcast to N WebSocket clients

await gateway.stop()
let realtimeGateway = try await startGateway(fetchMaxWait: "10ms")

final class Arrivals: Sendable {
    let times = Mutex<[String: [ContinuousClock.Instant]]>([:])
    let subscribed = Atomic<Int>(0)
}
let arrivals = Arrivals()
let socketTasks = (0..<socketCount).map { _ in
    Task {
        _ = try? await WebSocketTestClient.run(
            url: "ws://127.0.0.1:\(realtimeGateway.port)/v1/realtime?channels=profiles",
            headers: [("Authorization", "Bearer \(token)")]
        ) { text in
            let now = ContinuousClock.now
            if text.contains(#""op":"subscribed""#) { arrivals.subscribed.add(1, ordering: .relaxed); return }
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
        let envelope = try EventEnvelope(ProfileUpdated(userId: UUID(), username: "broadcast_\(index)", avatarUrl: nil, changed: [.username], updatedAt: Date()), source: "/splash/bench")
        let id = envelope.id.uuidString.lowercased()
        let sent = ContinuousClock.now
        try await producer.send(envelope.record(topic: TopicCatalog.authUsers.name))
        try await waitUntilReady("broadcast \(index) delivered", timeout: .seconds(30)) {
            arrivals.times.withLock { $0[id]?.count ?? 0 } >= socketCount
        }
        let received = arrivals.times.withLock { $0[id]! }.map { (($0 - sent) / .microseconds(1)) / 1_000 }.sorted()
        delays += received
        perEvent.append("event \(index + 1): \(received.count) clients, p50 \(format(received[received.count / 2])) ms, p99 \(format(received[Int(Double(received.count) * 0.99)])) ms, max \(format(received.last!)) ms")
    }
}
for task in socketTasks { task.cancel() }

// MARK: Report

let allRuns = runs
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
/// The median over rounds of one figure of one way.
func figure(_ name: String, _ load: Int, _ value: (Run) -> Double) -> Double { median(allRuns["\(name) c\(load)"]!.map(value)) }
/// Each round of one way beside the direct run of the same round.
func paired(_ name: String, _ load: Int) -> Zip2Sequence<[Run], [Run]> {
    zip(allRuns["\(name) c\(load)"]!, allRuns["auth directly c\(load)"]!)
}
/// The median over rounds of a proxy's difference from the direct run of the same round.
func added(_ name: String, _ load: Int, _ value: (Run) -> Double) -> Double {
    median(paired(name, load).map { value($0) - value($1) })
}
func report(_ load: Int, _ note: String) -> String {
    func line(_ label: String, _ name: String) -> String {
        let proxy = name == "auth directly"
            ? " (gateway at rest meanwhile: \(format(figure(name, load, \.gatewayMillisecondsPerSecond), 1)) ms CPU/s)"
            : ", proxy \(format(figure(name, load, \.proxyMicroseconds), 0)) µs"
        return "  \(label)\(format(figure(name, load, \.wrk.requestsPerSecond), 0)) req/s  p50 \(format(figure(name, load, \.wrk.p50))) ms  p99 \(format(figure(name, load, \.wrk.p99))) ms  CPU per request: auth \(format(figure(name, load, \.authMicroseconds), 0)) µs\(proxy)"
    }
    func ratio(_ name: String) -> String {
        format(median(paired(name, load).map { $0.wrk.requestsPerSecond / $1.wrk.requestsPerSecond }))
    }
    return """
    wrk -t\(min(2, load)) -c\(load) -d\(seconds)s (\(note)), medians of \(rounds) interleaved rounds:
    \(line("auth directly    ", "auth directly"))
    \(line("through gateway  ", "through gateway"))
    \(line("through nginx    ", "through nginx"))
      gateway/direct throughput \(ratio("through gateway")) (goal ≥ 0.7), added p50 \(format(added("through gateway", load, \.wrk.p50))) ms, added p99 \(format(added("through gateway", load, \.wrk.p99))) ms (goal ≤ 2 ms)
      nginx/direct throughput   \(ratio("through nginx")), added p50 \(format(added("through nginx", load, \.wrk.p50))) ms, added p99 \(format(added("through nginx", load, \.wrk.p99))) ms
    """
}
delays.sort()
print("""

gateway benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores; authenticated GET /auth/v1/user (auth reads the user from Postgres); the gateway with KAFKA_FETCH_MAX_WAIT=100ms
\(loads.map { report($0, $0 >= 16 ? "saturating: the CPU is shared by wrk, auth, Postgres and the proxy" : $0 == 1 ? "one connection: nothing queues" : "moderate: the cores are already busy") }.joined(separator: "\n"))
broadcast to \(socketCount) WebSocket clients on one gateway (Kafka publish → client receives; KAFKA_FETCH_MAX_WAIT=10ms), \(broadcasts) events:
  \(perEvent.joined(separator: "\n  "))
  all: p50 \(format(delays[delays.count / 2])) ms, p99 \(format(delays[Int(Double(delays.count) * 0.99)])) ms, max \(format(delays.last!)) ms
""")
kill(nginx.processIdentifier, SIGQUIT)
try? FileManager.default.removeItem(at: nginxDirectory)
await realtimeGateway.stop()
await auth.stop()
exit(0)
