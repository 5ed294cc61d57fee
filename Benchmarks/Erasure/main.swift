import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Identity
import Kafka
import LocalStack
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit
import Synchronization
import TestSupport

// The erasure figure (`make bench-erasure`): how long after a person's `DELETE /auth/v1/user`
// (through the gateway) every one of the five services that kept something of them has erased it
// and said so (its `*.user.erased.v1`): p50, p99 and the worst over `--people` deletions made one
// every `--interval-ms` while `--others` people keep liking, posting and reading the feed through
// the gateway; beside the same for `--quiet` deletions with nobody else about (the baseline in
// the same run). Before their deletion each person has likes, a collection, a post, an edit and
// a registered phone. All seven services run as their own processes on one Postgres and the
// embedded broker, as the build this benchmark is from (release for `make bench-erasure`).
let people = BenchmarkArguments.integer("--people", default: 40)
let quiet = BenchmarkArguments.integer("--quiet", default: 10)
let others = BenchmarkArguments.integer("--others", default: 8)
let interval = BenchmarkArguments.integer("--interval-ms", default: 500)

func format(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
func note(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func percentile(_ values: [Double], _ p: Double) -> Double { Percentiles.value(p, of: values) }

// MARK: The stack

let database = try await TestPostgres.shared.makeDatabase()
let kafka = try await TestKafka.shared.running()
let issuer = "http://localhost:8080/auth/v1"
let serviceToken = "erasure-bench-service-token-0123456789abcdef"
let catalogToken = "erasure-bench-catalog-token-0123456789abcdef"
let mediaKey = "erasure-bench-media-key-0123456789abcdef0123"
let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("erasure-bench-\(getpid())")
defer { try? FileManager.default.removeItem(at: blobs) }
let common = [
    "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
    "OUTBOX_POLL_INTERVAL": "100ms", "LOG_LEVEL": "error",
].merging(ServiceHarness.consumerGroups()) { own, _ in own }
func role(_ schema: String) async throws -> String { try await database.makeServiceRole(schema: schema, password: "bench-\(schema)").url }
func start(_ name: String, _ settings: [String: String], port: Int? = nil) async throws -> ServiceProcess {
    try await ServiceProcess(name, environment: common.merging(settings) { _, new in new }, port: port)
}

let auth = try await start(
    "auth",
    [
        "DATABASE_URL": try await role("auth"), "AUTH_JWT_KEY": SigningKey.generate().pem, "AUTH_JWT_ISSUER": issuer,
        "AUTH_SERVICE_TOKEN": serviceToken, "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
        "AUTH_RATE_LIMIT_TOKEN": "100000000/1m", "AUTH_RATE_LIMIT_SIGNUP": "100000000/1m",
    ]
)
func keys(_ prefix: String) -> [String: String] {
    ["\(prefix)_JWKS_URL": "\(auth.baseURL)/auth/v1/.well-known/jwks.json", "\(prefix)_JWT_ISSUER": issuer]
}
let catalogPort = freePort()
let catalog = try await start(
    "photo-catalog",
    keys("CATALOG").merging([
        "DATABASE_URL": try await role("catalog"), "CATALOG_PUBLIC_URL": "http://127.0.0.1:\(catalogPort)", "CATALOG_SERVICE_TOKEN": catalogToken,
    ]) { _, new in new },
    port: catalogPort
)
let render = try await start(
    "edit-render",
    keys("RENDER").merging([
        "DATABASE_URL": try await role("render"), "RENDER_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": mediaKey, "RENDER_WORKERS": "1",
        "RENDER_PHOTO_CATALOG_URL": catalog.baseURL, "CATALOG_SERVICE_TOKEN": catalogToken, "RENDER_SOURCE_HOSTS": "127.0.0.1",
        "RENDER_ALLOW_PRIVATE_SOURCES": "true", "RENDER_PUBLIC_URL": "http://127.0.0.1",
    ]) { _, new in new }
)
let social = try await start(
    "social",
    keys("SOCIAL").merging([
        "DATABASE_URL": try await role("social"), "SOCIAL_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": mediaKey,
        "CATALOG_SERVICE_TOKEN": catalogToken, "SOCIAL_PHOTO_CATALOG_URL": catalog.baseURL, "SOCIAL_IMAGE_WORKERS": "1",
    ]) { _, new in new }
)
let tracking = try await start(
    "tracking",
    keys("TRACKING").merging(["DATABASE_URL": try await role("tracking"), "TRACKING_SEED": "false"]) { _, new in new }
)
let notify = try await start(
    "notify",
    keys("NOTIFY").merging(["DATABASE_URL": try await role("notify"), "NOTIFY_AUTH_URL": auth.baseURL, "AUTH_SERVICE_TOKEN": serviceToken]) {
        _,
        new in new
    }
)
var gatewaySettings = [
    "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_JWT_ISSUER": issuer, "GATEWAY_PHOTO_CATALOG_URL": catalog.baseURL,
    "GATEWAY_EDIT_RENDER_URL": render.baseURL, "GATEWAY_SOCIAL_URL": social.baseURL, "GATEWAY_TRACKING_URL": tracking.baseURL,
    "GATEWAY_NOTIFY_URL": notify.baseURL,
]
for group in [
    "AUTH", "PHOTO_CATALOG", "EDIT_RENDER", "MEDIA", "SOCIAL", "STORAGE", "TRACKING", "NOTIFY", "DATA_AUTH", "DATA_SOCIAL", "DATA_TRACKING",
] {
    gatewaySettings["GATEWAY_RATE_LIMIT_\(group)"] = "100000000/1m"
}
let gateway = try await start("gateway", gatewaySettings)
let processes = [gateway, notify, tracking, social, render, catalog, auth]

// MARK: People

struct Person: Sendable {
    var id: String
    var email: String
    var token: String
}

@discardableResult
func call(_ method: HTTPMethod, _ path: String, token: String?, json: String? = nil, key: Bool = false) async throws -> (status: Int, body: String) {
    var request = HTTPClientRequest(url: gateway.baseURL + path)
    request.method = method
    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
    if key { request.headers.add(name: "Idempotency-Key", value: UUID().uuidString) }
    if let json {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 4 << 20)))
}

let photos = ["mate-aqua-01", "mate-blinds-02", "mate-dune-03", "mate-freshflower-04", "mate-garden-05"]
let password = "a long password 1"

func signUp(_ name: String) async throws -> Person {
    let email = "\(name)-\(UUID().uuidString.prefix(8).lowercased())@bench.splash.example"
    let answer = try await call(.POST, "/auth/v1/signup", token: nil, json: #"{"email":"\#(email)","password":"\#(password)"}"#)
    let body = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
    guard answer.status == 200, let token = body?["access_token"] as? String, let id = (body?["user"] as? [String: Any])?["id"] as? String else {
        throw BenchmarkFailure("sign-up: \(answer.status) \(answer.body)")
    }
    return Person(id: id, email: email, token: token)
}

/// Likes, a collection, a post, an edit and a phone: something in every service but tracking.
func useTheApps(_ person: Person, _ n: Int) async throws {
    for photo in photos.prefix(2) { try await call(.PUT, "/v1/likes/unsplash:\(photo)", token: person.token) }
    try await call(.POST, "/v1/collections", token: person.token, json: #"{"title":"Mine","private":false}"#)
    try await call(.POST, "/v1/posts", token: person.token, json: #"{"photo":{"unsplashPhotoId":"\#(photos[n % 5])"},"caption":"Mine"}"#, key: true)
    try await call(
        .POST,
        "/v1/edits",
        token: person.token,
        json: #"{"source":{"unsplashPhotoId":"\#(photos[n % 5])"},"filters":[{"name":"sepia"}],"output":{"longestEdge":320}}"#,
        key: true
    )
    try await call(
        .PUT,
        "/v1/devices/\(String(format: "%064x", n + 1))",
        token: person.token,
        json: #"{"platform":"ios","topic":"fi.splash.SplashEdit","environment":"sandbox"}"#
    )
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: Deletions

/// Seconds each `DELETE` took to be answered (auth checks the password with bcrypt at cost 12).
let answered = Mutex<[Double]>([])

/// Deletes each of `leaving`, one every `interval` ms: when each `DELETE` was sent, by user id.
func delete(_ leaving: [Person]) async throws -> [String: Date] {
    var sent: [String: Date] = [:]
    answered.withLock { $0 = [] }
    for person in leaving {
        let started = Date()
        let answer = try await call(.DELETE, "/auth/v1/user", token: person.token, json: #"{"password":"\#(password)"}"#)
        guard answer.status == 204 else { throw BenchmarkFailure("delete: \(answer.status) \(answer.body)") }
        answered.withLock { $0.append(Date().timeIntervalSince(started)) }
        sent[person.id.lowercased()] = started
        try await Task.sleep(for: .milliseconds(interval))
    }
    return sent
}

let erasureTopics = Erasures.services.map(\.topic)

/// For each deletion in `sent`, the seconds from its `DELETE` until each service acknowledged it,
/// by topic; waits until all five have for every one.
func acknowledgements(of sent: [String: Date]) async throws -> [String: [String: Double]] {
    let inspector = KafkaInspector(bootstrapServers: kafka.bootstrapServers, logger: Logger(label: "erasure-bench"))
    let deadline = ContinuousClock.now + .seconds(120)
    while true {
        var seconds: [String: [String: Double]] = [:]
        for record in try await inspector.records(in: erasureTopics) {
            guard let envelope = try? EventEnvelope(record), let started = sent[envelope.key],
                let body = try? JSONSerialization.jsonObject(with: Data(envelope.data)) as? [String: Any],
                let erasedAt = (body["erasedAt"] as? String).flatMap(EventJSON.parseTimestamp)
            else { continue }
            seconds[envelope.key, default: [:]][record.topic] = erasedAt.timeIntervalSince(started)
        }
        if seconds.count == sent.count, seconds.values.allSatisfy({ $0.count == erasureTopics.count }) { return seconds }
        guard ContinuousClock.now < deadline else {
            throw BenchmarkFailure(
                "\(seconds.values.filter { $0.count == erasureTopics.count }.count) of \(sent.count) deletions acknowledged by all five"
            )
        }
        try await Task.sleep(for: .milliseconds(500))
    }
}

func report(_ name: String, _ seconds: [String: [String: Double]]) {
    let complete = seconds.values.map { $0.values.max() ?? .nan }
    note(
        "\(name): \(complete.count) deletions, complete in all five services after p50 \(format(percentile(complete, 0.5))) s, "
            + "p99 \(format(percentile(complete, 0.99))) s, worst \(format(complete.max() ?? .nan)) s; "
            + "the DELETE answered after p50 \(format(percentile(answered.withLock { $0 }, 0.5))) s"
    )
    for topic in erasureTopics {
        let each = seconds.values.compactMap { $0[topic.name] }
        note("  \(topic.name): p50 \(format(percentile(each, 0.5))) s, p99 \(format(percentile(each, 0.99))) s")
    }
}

// The baseline: deletions with nobody else about.
var quietPeople: [Person] = []
for n in 0..<quiet {
    let person = try await signUp("quiet\(n)")
    try await useTheApps(person, n)
    quietPeople.append(person)
}
try await Task.sleep(for: .seconds(3))  // their edits rendered, their events consumed
report("no other load", try await acknowledgements(of: try await delete(quietPeople)))

// Under load: `others` people liking, posting and reading the feed while the deletions go out.
var leaving: [Person] = []
for n in 0..<people {
    let person = try await signUp("leaving\(n)")
    try await useTheApps(person, n)
    leaving.append(person)
}
var busy: [Person] = []
for n in 0..<others { busy.append(try await signUp("busy\(n)")) }
try await Task.sleep(for: .seconds(3))
let requests = Atomic<Int>(0)
let stop = Atomic<Bool>(false)
let load = Task {
    await withTaskGroup(of: Void.self) { group in
        for (n, person) in busy.enumerated() {
            group.addTask {
                var round = 0
                while !stop.load(ordering: .relaxed) {
                    round += 1
                    let photo = "unsplash:\(photos[(round + n) % 5])"
                    _ = try? await call(round % 2 == 0 ? .DELETE : .PUT, "/v1/likes/\(photo)", token: person.token)
                    _ = try? await call(.GET, "/v1/feed?limit=20", token: person.token)
                    if round % 5 == 0 {
                        _ = try? await call(
                            .POST,
                            "/v1/posts",
                            token: person.token,
                            json: #"{"photo":{"unsplashPhotoId":"\#(photos[round % 5])"},"caption":"busy"}"#,
                            key: true
                        )
                    }
                    requests.add(round % 5 == 0 ? 3 : 2, ordering: .relaxed)
                }
            }
        }
    }
}
let loadStarted = ContinuousClock.now
let underLoad = try await acknowledgements(of: try await delete(leaving))
stop.store(true, ordering: .relaxed)
await load.value
let loadSeconds = Double((ContinuousClock.now - loadStarted).components.seconds)
report("while \(others) people made \(format(Double(requests.load(ordering: .relaxed)) / max(loadSeconds, 1), 0)) requests/s", underLoad)

for process in processes { await process.stop() }
