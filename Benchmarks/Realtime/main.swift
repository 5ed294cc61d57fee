import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Identity
import Kafka
import LocalStack
import Logging
import ServiceKit
import TestSupport

// Realtime at scale (`make bench-realtime`): N clients on one gateway, each following its own
// order, and one status change per order per second published to Kafka; the delay from the
// publish to each client's receipt (p50, p99, max) and the gateway's memory per connection. Each
// second's changes go out in `--slices` even slices (20 by default: 2,000 orders do not all change
// at one instant), each timed from its own publish; `--slices 1` sends the whole second at once.
// Two ways take turns on the same gateway: Supabase Realtime (`/realtime/v1/websocket`, vsn 2.0.0,
// a `postgres_changes` UPDATE binding with `id=eq.<order>`) and, as the baseline, Splash's own
// protocol (`/v1/realtime`, the `orders:{id}` channel). auth (for its key set) and the gateway
// run as their own processes (release builds) on the test support's Postgres and embedded broker,
// which the gateway polls every 10 ms; the clients share the same two cores. With `--floor`, the
// same clients are then connected to `WebSocketFloor` for the memory a connection costs there.
let clients = BenchmarkArguments.integer("--clients", default: 2_000)
let seconds = BenchmarkArguments.integer("--seconds", default: 20)
let rounds = BenchmarkArguments.integer("--rounds", default: 2)
let slices = max(1, BenchmarkArguments.integer("--slices", default: 20))
/// Which way each round starts with (`supabase` or `native`): a round's first way meets the
/// gateway before the other's clients have come and gone.
let ways: [Way] =
    switch BenchmarkArguments.string("--first") ?? "supabase" {
    case "supabase": [.supabase, .native]
    case "native": [.native, .supabase]
    default: fatalError("--first takes supabase or native")
    }
/// Whether the floor (`WebSocketFloor`) is measured after the gateway's rounds.
let measuresFloor = BenchmarkArguments.flag("--floor")
var logger = Logger(label: "bench")
logger.logLevel = .error

let database = try await TestPostgres.shared.makeDatabase()
let (_, databaseURL) = try await database.makeServiceRole(schema: "auth", password: "bench")
let kafka = try await TestKafka.shared.running()
let issuer = "http://localhost:8080/auth/v1"
let key = SigningKey.generate()
let common = ["KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms", "LOG_LEVEL": "error"]
let auth = try await ServiceProcess(
    "auth",
    environment: common.merging([
        "DATABASE_URL": databaseURL, "AUTH_JWT_KEY": key.pem, "AUTH_JWT_ISSUER": issuer, "AUTH_BCRYPT_COST": "4",
    ]) { _, new in new }
)
let gateway = try await ServiceProcess(
    "gateway",
    environment: common.merging([
        "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_JWT_ISSUER": issuer, "GATEWAY_RATE_LIMIT_REALTIME": "100000000/1m",
        "GATEWAY_REALTIME_MAX_CONNECTIONS": String(clients * 2 + 100), "GATEWAY_REALTIME_BUFFER": "1024",
    ]) { _, new in new }
)
try await waitUntilReady("the gateway's event feed", timeout: .seconds(60)) {
    (try? await HTTPClient.shared.get(url: "\(gateway.baseURL)/readyz").get().status.code) == 200
}

/// A server's resident memory, in bytes (`VmRSS`).
func residentBytes(_ server: ServiceProcess) -> Double {
    Double(server.memory()?.resident ?? 0)
}

// One order per client, each with its own customer: placed first, so the gateway knows its parties.
let pairs = try (0..<clients).map { _ in
    var examples = EventExamples()
    return (try examples.example(OrderPlaced.self), try examples.example(OrderStatusChanged.self))
}
let placements = pairs.map(\.0)
let orders = pairs.map(\.1)
var producerConfiguration = KafkaProducerConfiguration(bootstrapServers: kafka.bootstrapServers, clientID: "bench")
producerConfiguration.linger = .milliseconds(1)
let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
let producing = Task { try await producer.run() }
func publish(_ events: [any DomainEvent]) async throws {
    let records = try events.map { try EventEnvelope($0, source: "/splash/bench").record(topic: type(of: $0).topic.name) }
    for result in await producer.send(records) { if case .failure(let error) = result { throw error } }
}
try await publish(placements)
// The gateway takes the placements in (its order directory, its replay windows) before anything is
// measured: that memory grows with the events, whether or not anyone is connected, and would be
// counted against the first round's connections. Settled: no more than 256 KiB in a second.
var settled = residentBytes(gateway)
for _ in 0..<30 {
    try await Task.sleep(for: .seconds(1))
    let now = residentBytes(gateway)
    defer { settled = now }
    if abs(now - settled) < 256 * 1_024 { break }
}

enum Way: String, CaseIterable {
    case supabase = "Supabase Realtime"
    case native = "Splash's /v1/realtime"
}
let ws = gateway.baseURL.replacingOccurrences(of: "http://", with: "ws://")

/// Connects every client the way `way` does, to `server` (the gateway's WebSocket URL), and waits
/// until each is subscribed.
func connect(_ way: Way, to server: String = ws) async throws -> [RealtimeSocket] {
    var sockets: [RealtimeSocket] = []
    for (index, order) in orders.enumerated() {
        let token = try testAccessToken(user: order.parties.customerId, role: "customer", key: key, issuer: issuer)
        let id = order.orderId.uuidString.lowercased()
        switch way {
        case .supabase:
            let socket = RealtimeSocket(url: "\(server)/realtime/v1/websocket?apikey=anon&vsn=2.0.0")
            try await socket.send(
                #"["1","1","realtime:o","phx_join",{"config":{"postgres_changes":[{"event":"UPDATE","schema":"public","table":"orders","filter":"id=eq.\#(id)"}]},"access_token":"\#(token)"}]"#
            )
            sockets.append(socket)
        case .native:
            sockets.append(RealtimeSocket(url: "\(server)/v1/realtime?channels=orders:\(id)", token: token))
        }
        if index % 100 == 99 { try await Task.sleep(for: .milliseconds(20)) }
    }
    for socket in sockets {
        switch way {
        case .supabase:
            _ = try await socket.phoenix(within: .seconds(60)) {
                $0["event"] as? String == "phx_reply" && ($0["payload"] as? [String: Any])?["status"] as? String == "ok"
            }
        case .native: _ = try await socket.message(within: .seconds(60)) { $0["op"] as? String == "subscribed" }
        }
    }
    return sockets
}

struct Result {
    var latencies: [Double] = []
    var bytesPerConnection: [Double] = []
    var lost = 0
}
var results: [Way: Result] = [:]
var version = 1
for round in 1...rounds {
    for way in ways {
        let before = residentBytes(gateway)
        let sockets = try await connect(way)
        try await Task.sleep(for: .seconds(1))
        results[way, default: Result()].bytesPerConnection.append((residentBytes(gateway) - before) / Double(clients))
        // One change per order per second; each remembered by (order, version) with when it was sent.
        var sent: [String: ContinuousClock.Instant] = [:]
        for _ in 0..<seconds {
            version += 1
            let started = ContinuousClock.now
            let sliceSize = (orders.count + slices - 1) / slices
            for (index, slice) in stride(from: 0, to: orders.count, by: sliceSize).enumerated() {
                let slice = orders[slice..<min(orders.count, slice + sliceSize)]
                try await Task.sleep(until: started + .seconds(1) * Double(index) / Double(slices))
                let sentAt = ContinuousClock.now
                let batch = slice.map { order -> any DomainEvent in
                    var change = order
                    change.version = version
                    change.status = version % 2 == 0 ? .preparing : .accepted
                    return change
                }
                for order in slice { sent["\(order.orderId.uuidString.lowercased())/\(version)"] = sentAt }
                try await publish(batch)
            }
            try await Task.sleep(until: started + .seconds(1))
        }
        try await Task.sleep(for: .seconds(2))
        var latencies: [Double] = []
        for socket in sockets {
            for (text, arrived) in zip(socket.messages, socket.arrivalTimes) {
                guard let (order, number) = Benchmark.orderAndVersion(text, way: way), let at = sent["\(order)/\(number)"] else { continue }
                latencies.append(Double((arrived - at).components.attoseconds) / 1e15 + Double((arrived - at).components.seconds) * 1_000)
            }
        }
        results[way, default: Result()].lost += sent.count - latencies.count
        results[way, default: Result()].latencies += latencies
        for socket in sockets { await socket.disconnect() }
        print("round \(round), \(way.rawValue): \(latencies.count) changes received of \(sent.count)")
    }
}

enum Benchmark {
    /// The order and version a client received, from either protocol's frame.
    static func orderAndVersion(_ text: String, way: Way) -> (String, Int)? {
        guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return nil }
        switch way {
        case .supabase:
            guard let frame = json as? [Any], frame.count == 5, let payload = frame[4] as? [String: Any],
                let record = (payload["data"] as? [String: Any])?["record"] as? [String: Any],
                let id = record["id"] as? String, let version = record["version"] as? Int
            else { return nil }
            return (id, version)
        case .native:
            guard let event = json as? [String: Any], event["type"] as? String == OrderStatusChanged.type,
                let data = event["data"] as? [String: Any], let id = data["orderId"] as? String, let version = data["version"] as? Int
            else { return nil }
            return (id.lowercased(), version)
        }
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }
}

print(
    "\n\(clients) clients on one gateway, each following its own order; one status change per order per second in \(slices) slice(s) for \(seconds) s, \(rounds) round(s) per way (publish → receipt, ms):"
)
for way in Way.allCases {
    let result = results[way] ?? Result()
    let sorted = result.latencies.sorted()
    let memory = result.bytesPerConnection.map { String(format: "%.1f", $0 / 1_024) }.joined(separator: ", ")
    print(
        String(
            format: "  %@: p50 %.1f, p99 %.1f, max %.1f over %d changes (%d not received); gateway memory per connection %@ KiB",
            way.rawValue,
            Benchmark.percentile(sorted, 0.5),
            Benchmark.percentile(sorted, 0.99),
            sorted.last ?? .nan,
            sorted.count,
            result.lost,
            memory
        )
    )
}
if measuresFloor {
    // The same clients, the Supabase way, on a WebSocket server of SwiftNIO handlers alone (no
    // task per connection), which answers every frame with an ok: what a connection costs below
    // the gateway's code and libraries.
    let floor = try await ServiceProcess("WebSocketFloor", environment: [:])
    let before = residentBytes(floor)
    let sockets = try await connect(.supabase, to: floor.baseURL.replacingOccurrences(of: "http://", with: "ws://"))
    try await Task.sleep(for: .seconds(1))
    let perConnection = (residentBytes(floor) - before) / Double(clients)
    for socket in sockets { await socket.disconnect() }
    await floor.stop()
    print(String(format: "  the floor, a WebSocket server of SwiftNIO handlers alone: memory per connection %.1f KiB", perConnection / 1_024))
}
producing.cancel()
await gateway.stop()
await auth.stop()
exit(0)
