import AsyncHTTPClient
import Crypto
import Foundation
import HummingbirdBcrypt
import Identity
import KeySetClient
import LocalStack
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit
import Synchronization
import TestSupport

// auth's figures, each beside a baseline measured in the same run (`make bench-auth`):
//  1. sign-in latency at bcrypt cost 12, against bcrypt's own verify at cost 12;
//  2. refresh requests per second and p99 over HTTP with N concurrent clients, against GET /healthz
//     (the HTTP floor: same server, same client, no database, no signing);
//  3. access-token verifications per second in-process (1 and 2 tasks), against swift-crypto's bare
//     P-256 signature check of the same token;
//  4. POST /recover for addresses with an account against addresses without one, alternating, one
//     at a time: the same answer must come in the same time (no account enumeration by timing).
// The auth binary runs as its own process (release build), against the test support's Postgres
// and embedded broker; the load comes from this process over loopback, on the same 2 cores.
let clients = BenchmarkArguments.integer("--clients", default: 32)
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
let signIns = BenchmarkArguments.integer("--sign-ins", default: 30)
let recoveries = BenchmarkArguments.integer("--recoveries", default: 300)
var logger = Logger(label: "bench")
logger.logLevel = .error
let password = "correct horse battery"

func percentile(_ sorted: [Duration], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))].milliseconds
}

// MARK: Start auth

let database = try await TestPostgres.shared.makeDatabase()
let local = LocalDatabase(name: database.name, port: database.port)
try await local.provision(
    superuserPassword: nil,
    services: [LocalService("auth", port: 0, schema: "auth")],
    passwords: ["splash_auth": "bench"],
    logger: logger
)
let cluster = try await TestKafka.shared.running()
let port = freePort()
let authKey = SigningKey.generate()
let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("auth")
let process = ProcessCommand(
    executable,
    [],
    environment: ProcessInfo.processInfo.environment.merging([
        "DATABASE_URL": local.url(role: "splash_auth", password: "bench"),
        "DATABASE_POOL_SIZE": "16",
        "KAFKA_BROKERS": cluster.bootstrapServers,
        "KAFKA_CREATE_TOPICS": "false",
        "AUTH_JWT_KEY": authKey.pem,
        "AUTH_BCRYPT_COST": "12",
        "AUTH_RATE_LIMIT_TOKEN": "100000000/1m",
        "AUTH_RATE_LIMIT_SIGNUP": "100000000/1m",
        "HTTP_PORT": String(port),
        "LOG_LEVEL": "error",
        // auth stops by itself if this process dies first.
        "SPLASH_PARENT_PID": String(getpid()),
    ]) { _, new in new }
).makeProcess()
try process.run()

var configuration = HTTPClient.Configuration()
configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: clients * 2)
let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
let base = "http://127.0.0.1:\(port)"

func call(_ method: HTTPMethod, _ path: String, json: [String: String]? = nil) async throws -> (Int, Data) {
    var request = HTTPClientRequest(url: base + path)
    request.method = method
    if let json {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(try JSONSerialization.data(withJSONObject: json))
    }
    let response = try await http.execute(request, timeout: .seconds(30))
    return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 1 << 20)))
}

let deadline = ContinuousClock.now + .seconds(60)
while (try? await call(.GET, "/readyz").0) != 200 {
    guard ContinuousClock.now < deadline, process.isRunning else { fatalError("auth did not become ready") }
    try await Task.sleep(for: .milliseconds(200))
}

// MARK: 1. Sign-in at bcrypt cost 12

let email = "bench-\(UUID().uuidString.prefix(8))@example.com"
let signedUp = try await call(.POST, "/auth/v1/signup", json: ["email": email, "password": password]).0
precondition(signedUp == 200)
var signInTimes: [Duration] = []
for _ in 0..<signIns {
    let start = ContinuousClock.now
    let (status, _) = try await call(.POST, "/auth/v1/token?grant_type=password", json: ["email": email, "password": password])
    precondition(status == 200, "sign-in failed: \(status)")
    signInTimes.append(start.duration(to: .now))
}
signInTimes.sort()
let hash = Bcrypt.hash(password, cost: 12)
var bcryptTimes: [Duration] = []
for _ in 0..<10 {
    let start = ContinuousClock.now
    precondition(Bcrypt.verify(password, hash: hash))
    bcryptTimes.append(start.duration(to: .now))
}
bcryptTimes.sort()

// MARK: 2. Refresh throughput

/// Runs `clients` loops of `step` for `seconds`; returns requests per second and sorted latencies.
func load(_ step: @escaping @Sendable (Int) async throws -> Void) async throws -> (Double, [Duration]) {
    let end = ContinuousClock.now + .seconds(seconds)
    let start = ContinuousClock.now
    let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
        for client in 0..<clients {
            group.addTask {
                var own: [Duration] = []
                while ContinuousClock.now < end {
                    let begin = ContinuousClock.now
                    try await step(client)
                    own.append(begin.duration(to: .now))
                }
                return own
            }
        }
        return try await group.reduce(into: []) { $0 += $1 }
    }
    return (Double(latencies.count) / (start.duration(to: .now).milliseconds / 1_000), latencies.sorted())
}

var initial: [String] = []
for index in 0..<clients {
    let (status, body) = try await call(
        .POST,
        "/auth/v1/signup",
        json: ["email": "bench-\(index)-\(UUID().uuidString.prefix(6))@example.com", "password": password]
    )
    precondition(status == 200)
    initial.append((try JSONSerialization.jsonObject(with: body) as! [String: Any])["refresh_token"] as! String)
}
/// Each client's current refresh token (each client reads and writes its own slot only).
let slots = Mutex(initial)
let (healthRate, healthLatencies) = try await load { _ in
    let status = try await call(.GET, "/healthz").0
    precondition(status == 200)
}
let (refreshRate, refreshLatencies) = try await load { client in
    let (status, body) = try await call(.POST, "/auth/v1/token?grant_type=refresh_token", json: ["refresh_token": slots.withLock { $0[client] }])
    precondition(status == 200, "refresh failed: \(status) \(String(decoding: body, as: UTF8.self))")
    let next = (try JSONSerialization.jsonObject(with: body) as! [String: Any])["refresh_token"] as! String
    slots.withLock { $0[client] = next }
}

// MARK: 3. Token verification in-process

let key = authKey
let now = Int(Date().timeIntervalSince1970)
let claims = AccessTokenClaims(
    issuer: "http://localhost:8080/auth/v1",
    subject: UUID().uuidString.lowercased(),
    expiresAt: now + 3_600,
    issuedAt: now,
    email: "ana@example.com",
    appMetadata: ["provider": .string("email"), "role": .string("customer")],
    userMetadata: ["username": .string("ana")],
    sessionID: UUID().uuidString.lowercased(),
    authenticationMethods: [.init(method: "password", timestamp: now)]
)
let token = try AccessTokenSigner(key: key).sign(claims)
let verifier = AccessTokenVerifier(keys: [key.verificationKey], issuer: "http://localhost:8080/auth/v1")
let parts = token.split(separator: ".")
let signingInput = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
let signature = try P256.Signing.ECDSASignature(rawRepresentation: Base64URL.decode(parts[2])!)

func rate(tasks: Int, _ work: @escaping @Sendable () throws -> Void) async throws -> Double {
    let duration = Duration.seconds(3)
    let start = ContinuousClock.now
    let counts = try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                var count = 0
                while start.duration(to: .now) < duration {
                    for _ in 0..<100 { try work() }
                    count += 100
                }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
    return Double(counts) / (start.duration(to: .now).milliseconds / 1_000)
}
let verifyOne = try await rate(tasks: 1) { _ = try verifier.verify(token) }
let verifyTwo = try await rate(tasks: 2) { _ = try verifier.verify(token) }
let bareOne = try await rate(tasks: 1) { precondition(key.verificationKey.publicKey.isValidSignature(signature, for: signingInput)) }
// What a service's KeySetCache (the gateway's edge) does with a token it verified before: auth's
// key set fetched from the running auth, the token checked once, then found again.
let keySet = KeySetCache(
    url: URL(string: base + "/auth/v1/.well-known/jwks.json")!,
    issuer: "http://localhost:8080/auth/v1",
    refreshInterval: .seconds(5),
    client: http,
    logger: logger
)
_ = try await keySet.verify(token)
let rememberedOne = try await rate(tasks: 1) { precondition(keySet.verifyWithoutFetching(token) != nil) }

// MARK: 4. /recover, known and unknown addresses

// Accounts made by /otp (no bcrypt: quick to make many); every address is asked for once, so the
// one-mail-a-minute limit never answers.
let known = (0..<recoveries).map { "known-\($0)-\(UUID().uuidString.prefix(6))@example.com" }
let unknown = (0..<recoveries).map { "unknown-\($0)-\(UUID().uuidString.prefix(6))@example.com" }
for address in known {
    let status = try await call(.POST, "/auth/v1/otp", json: ["email": address]).0
    precondition(status == 200, "otp: \(status)")
}
var knownTimes: [Duration] = []
var unknownTimes: [Duration] = []
for index in 0..<recoveries {
    // Alternate which goes first, so neither side always follows the other's work.
    let pair = index.isMultiple(of: 2) ? [(known[index], true), (unknown[index], false)] : [(unknown[index], false), (known[index], true)]
    for (address, exists) in pair {
        let start = ContinuousClock.now
        let (status, body) = try await call(.POST, "/auth/v1/recover", json: ["email": address])
        precondition(status == 200 && body == Data("{}".utf8), "recover: \(status)")
        if exists { knownTimes.append(start.duration(to: .now)) } else { unknownTimes.append(start.duration(to: .now)) }
    }
}
knownTimes.sort()
unknownTimes.sort()
func mean(_ times: [Duration]) -> Double { times.map(\.milliseconds).reduce(0, +) / Double(max(1, times.count)) }

try await http.shutdown().get()
process.terminate()
process.waitUntilExit()

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
print(
    """
    auth benchmark — \(ProcessInfo.processInfo.activeProcessorCount) cores, \(clients) concurrent clients, \(seconds) s per HTTP load

    1. sign-in (POST /token?grant_type=password), bcrypt cost 12, \(signIns) sequential:
       p50 \(format(percentile(signInTimes, 0.5))) ms, p99 \(format(percentile(signInTimes, 0.99))) ms
       baseline, Bcrypt.verify at cost 12 in-process: p50 \(format(percentile(bcryptTimes, 0.5))) ms

    2. refresh (POST /token?grant_type=refresh_token), each client rotating its own session:
       \(format(refreshRate, 0)) req/s, p50 \(format(percentile(refreshLatencies, 0.5))) ms, p99 \(format(percentile(refreshLatencies, 0.99))) ms
       baseline, GET /healthz on the same server: \(format(healthRate, 0)) req/s, p99 \(format(percentile(healthLatencies, 0.99))) ms

    3. access-token verification (AccessTokenVerifier.verify), in-process:
       1 task: \(format(verifyOne, 0))/s, 2 tasks: \(format(verifyTwo, 0))/s
       baseline, bare P-256 signature check, 1 task: \(format(bareOne, 0))/s
       a token verified before, found again by KeySetCache (the gateway's edge), 1 task: \(format(rememberedOne, 0))/s

    4. POST /recover, \(recoveries) addresses of each kind, alternating, one at a time:
       with an account:    p10 \(format(percentile(knownTimes, 0.1), 2)) ms, p50 \(format(percentile(knownTimes, 0.5), 2)) ms, \
    p90 \(format(percentile(knownTimes, 0.9), 2)) ms, p99 \(format(percentile(knownTimes, 0.99), 2)) ms, mean \(format(mean(knownTimes), 2)) ms
       without an account: p10 \(format(percentile(unknownTimes, 0.1), 2)) ms, p50 \(format(percentile(unknownTimes, 0.5), 2)) ms, \
    p90 \(format(percentile(unknownTimes, 0.9), 2)) ms, p99 \(format(percentile(unknownTimes, 0.99), 2)) ms, mean \(format(mean(unknownTimes), 2)) ms
    """
)
exit(0)
