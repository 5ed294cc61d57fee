import AsyncHTTPClient
import Contracts
import Foundation
import LocalStack
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceKit
import TestSupport

// tracking's figures (`make bench-tracking`), each beside its baseline in the same run:
//  1. position ingest: wrk at 64 connections, each a driver posting batches of 10 points, through
//     the gateway and straight to tracking (positions per second, latency);
//  2. meanwhile, a position accepted → on the customer's orders:{id} WebSocket: a probe driver on
//     an active order posts a point every 50 ms, its customer's socket notes when each arrives;
//  3. order transitions with their outbox events: 32 clients walking orders through the kitchen's
//     moves (accepted, preparing, ready_for_pickup) through the gateway; the baseline, the same
//     transaction written by hand (lock the order, the move and its history, both events; the
//     order's sync_xid is its trigger's) by pgbench at 32 connections as tracking's role, the services
//     stopped: the database alone. Once more with the NOTIFY each writing transaction sent before
//     relays were woken in their process.
// tracking and the gateway run as their own processes (release builds) against the test support's
// Postgres and embedded broker, with a fake key server for the tokens; wrk and the probe share the
// same two cores.
let seconds = BenchmarkArguments.integer("--seconds", default: 10)
let connections = BenchmarkArguments.integer("--connections", default: 64)
let batch = BenchmarkArguments.integer("--batch", default: 10)
let transitionClients = BenchmarkArguments.integer("--transition-clients", default: 32)

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
func note(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func percentile(_ sorted: [Double], _ percent: Double) -> Double {
    sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, max(0, Int((percent / 100 * Double(sorted.count)).rounded(.up)) - 1))]
}

// MARK: The stack

let keys = FakePhotoCatalog(images: [:])
try await keys.start()
let database = try await TestPostgres.shared.makeDatabase()
let (role, databaseURL) = try await database.makeServiceRole(schema: "tracking", password: "bench")
let kafka = try await TestKafka.shared.running()
let issuer = "http://localhost:8080/auth/v1"
let tracking = try await ServiceProcess(
    "tracking",
    environment: [
        "DATABASE_URL": databaseURL, "DATABASE_POOL_SIZE": "8", "LOG_LEVEL": "error",
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
        "TRACKING_JWKS_URL": keys.baseURL + "/jwks.json", "TRACKING_JWT_ISSUER": issuer, "TRACKING_SEED": "false",
    ]
)
let unlimited = "100000000/1m"
let gateway = try await ServiceProcess(
    "gateway",
    environment: [
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms", "LOG_LEVEL": "error",
        "GATEWAY_AUTH_URL": keys.baseURL, "GATEWAY_JWKS_URL": keys.baseURL + "/jwks.json", "GATEWAY_JWT_ISSUER": issuer,
        "GATEWAY_TRACKING_URL": tracking.baseURL, "GATEWAY_RATE_LIMIT_TRACKING": unlimited,
    ]
)

func token(_ user: UUID, _ role: String) throws -> String { try testAccessToken(user: user, role: role, key: keys.key, issuer: issuer) }

@discardableResult
func call(
    _ base: String,
    _ method: HTTPMethod,
    _ path: String,
    token: String,
    json: Any? = nil,
    headers: [(String, String)] = []
) async throws -> (Int, [String: Any]) {
    var request = HTTPClientRequest(url: base + path)
    request.method = method
    request.headers.add(name: "Authorization", value: "Bearer \(token)")
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let json {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json)))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    let body = Data(buffer: try await response.body.collect(upTo: 1 << 20))
    return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:])
}

let admin = try token(UUID(), "admin")
let owner = UUID()
let customer = UUID()
let ownerToken = try token(owner, "restaurant")
let customerToken = try token(customer, "customer")
let (created, restaurant) = try await call(
    gateway.baseURL,
    .POST,
    "/v1/restaurants",
    token: admin,
    json: [
        "ownerId": owner.uuidString.lowercased(), "name": "Benchmark kitchen", "location": ["lat": 60.1710, "lng": 24.9414],
        "menu": [["id": "m1", "name": "Soup", "priceCents": 900]],
    ]
)
precondition(created == 201, "the restaurant was not made: \(created)")
let restaurantID = restaurant["id"] as! String

/// Places an order and takes it to `ready_for_pickup` (or not), as the owner.
func order(through base: String, ready: Bool) async throws -> String {
    let (status, placed) = try await call(
        base,
        .POST,
        "/v1/orders",
        token: customerToken,
        json: [
            "restaurantId": restaurantID, "items": [["menuItemId": "m1", "quantity": 2]],
            "dropoff": ["address": "Senate Square", "lat": 60.1694, "lng": 24.9526],
        ],
        headers: [("Idempotency-Key", UUID().uuidString)]
    )
    precondition(status == 201, "an order was not placed: \(status)")
    let id = placed["id"] as! String
    if ready {
        for (index, to) in ["accepted", "preparing", "ready_for_pickup"].enumerated() {
            try await call(
                base,
                .POST,
                "/v1/orders/\(id)/transitions",
                token: ownerToken,
                json: ["to": to],
                headers: [("If-Match", "\"\(index + 1)\"")]
            )
        }
    }
    return id
}

// MARK: 1 and 2. Positions, and the probe

// The probe: a driver on an order its customer watches.
let probeDriver = UUID()
let probeToken = try token(probeDriver, "driver")
let probeOrder = try await order(through: gateway.baseURL, ready: true)
let (assigned, _) = try await call(
    gateway.baseURL,
    .POST,
    "/v1/orders/\(probeOrder)/transitions",
    token: admin,
    json: ["to": "driver_assigned", "driverId": probeDriver.uuidString.lowercased()],
    headers: [("If-Match", "\"4\"")]
)
precondition(assigned == 200, "the probe's order was not assigned: \(assigned)")
let socket = RealtimeSocket(url: gateway.baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/v1/realtime", token: customerToken)
try await socket.send(#"{"op":"subscribe","channel":"orders:\#(probeOrder)","ref":"p"}"#)
_ = try await socket.message { $0["op"] as? String == "subscribed" }

/// Posts a point every 50 ms for `duration`, keeping when each was sent (by its recordedAt).
func probe(for duration: Duration) async throws -> [String: ContinuousClock.Instant] {
    var sent: [String: ContinuousClock.Instant] = [:]
    let end = ContinuousClock.now + duration
    var step = 0
    while ContinuousClock.now < end {
        step += 1
        let recorded = EventJSON.formatTimestamp(Date())
        sent[recorded] = .now
        try await call(
            gateway.baseURL,
            .POST,
            "/v1/drivers/me/positions",
            token: probeToken,
            json: [["lat": 60.1700 + Double(step % 100) * 0.00001, "lng": 24.9400, "recordedAt": recorded]]
        )
        try await Task.sleep(for: .milliseconds(50))
    }
    return sent
}

/// Each probe point's time from sending to arriving on the customer's socket, in milliseconds.
func probeLatencies(_ sent: [String: ContinuousClock.Instant], after start: Int) -> [Double] {
    let messages = socket.messages.dropFirst(start)
    let times = socket.arrivalTimes.dropFirst(start)
    var latencies: [Double] = []
    for (text, arrived) in zip(messages, times) {
        guard let event = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            event["type"] as? String == DriverLocationUpdated.type,
            let recorded = (event["data"] as? [String: Any])?["recordedAt"] as? String,
            let at = sent[recorded]
        else { continue }
        latencies.append(Double((arrived - at).components.attoseconds) / 1e15 + Double((arrived - at).components.seconds) * 1_000)
    }
    return latencies.sorted()
}

/// wrk's Lua: each connection one driver, posting the same batch of `batch` points (recorded now).
let drivers = try (0..<connections).map { _ in try token(UUID(), "driver") }
let recordedAt = EventJSON.formatTimestamp(Date())
let body =
    "[" + (0..<batch).map { #"{"lat":60.17\#($0),"lng":24.94\#($0),"speedMps":8.3,"recordedAt":"\#(recordedAt)"}"# }.joined(separator: ",") + "]"
let positionsScript = """
    local tokens = {\(drivers.map { "\"\($0)\"" }.joined(separator: ","))}
    local body = '\(body)'
    local threads = 0
    setup = function(thread) thread:set("tid", threads); threads = threads + 1 end
    local n = 0
    request = function()
      n = n + 1
      local driver = ((n + tid * 7) % #tokens) + 1
      return wrk.format("POST", "/v1/drivers/me/positions", { ["Authorization"] = "Bearer " .. tokens[driver], ["Content-Type"] = "application/json" }, body)
    end
    """
_ = try await Wrk.run(gateway.baseURL, seconds: 2, connections: connections, requests: positionsScript)  // warm-up
let probeStart = socket.messages.count
async let probed = probe(for: .seconds(seconds))
let throughGateway = try await Wrk.run(gateway.baseURL, seconds: seconds, connections: connections, requests: positionsScript)
let probeLatency = probeLatencies(try await probed, after: probeStart)
let idleStart = socket.messages.count
let idleLatency = probeLatencies(try await probe(for: .seconds(5)), after: idleStart)
let direct = try await Wrk.run(tracking.baseURL, seconds: seconds, connections: connections, requests: positionsScript)

// MARK: 3. Transitions

let ordersPerClient = max(1, seconds * 3)
var transitionLatencies: [Double] = []
let transitionStart = ContinuousClock.now
try await withThrowingTaskGroup(of: [Double].self) { group in
    for _ in 0..<transitionClients {
        group.addTask {
            var latencies: [Double] = []
            for _ in 0..<ordersPerClient {
                let id = try await order(through: gateway.baseURL, ready: false)
                for (index, to) in ["accepted", "preparing", "ready_for_pickup"].enumerated() {
                    let start = ContinuousClock.now
                    let (status, _) = try await call(
                        gateway.baseURL,
                        .POST,
                        "/v1/orders/\(id)/transitions",
                        token: ownerToken,
                        json: ["to": to],
                        headers: [("If-Match", "\"\(index + 1)\"")]
                    )
                    precondition(status == 200, "a transition answered \(status)")
                    latencies.append(
                        Double((ContinuousClock.now - start).components.attoseconds) / 1e15 + Double((ContinuousClock.now - start).components.seconds)
                            * 1_000
                    )
                }
            }
            return latencies
        }
    }
    for try await latencies in group { transitionLatencies += latencies }
}
let transitionElapsed = transitionStart.duration(to: .now)
transitionLatencies.sort()
let placedAndMoved = Double(transitionClients * ordersPerClient * 4)
try await database.waitUntilOutboxIsPublished(schema: "tracking", timeout: .seconds(60))
let statusEvents = try await database.count("tracking.outbox", where: "type = 'tracking.order.status-changed.v2'")

// MARK: 3b. The same transaction by the database alone

await socket.disconnect()
await gateway.stop()
await tracking.stop()
let benchOrders = 1_000
let ownerID = owner.uuidString.lowercased()
let payload =
    #"{"by":{"role":"restaurant","userId":"\#(ownerID)"},"changedAt":"2026-11-26T12:00:00.000Z","orderId":"00000000-0000-0000-0000-000000000000","parties":{"customerId":"\#(customer.uuidString.lowercased())","driverId":null,"restaurantId":"\#(restaurantID)","restaurantOwnerId":"\#(ownerID)"},"previousStatus":"accepted","reason":null,"status":"preparing","version":3}"#
try await database.withClient { client in
    try await client.query(
        """
        INSERT INTO tracking.orders (id, customer_id, restaurant_id, restaurant_owner_id, items, total_cents, dropoff_address, dropoff_lat, dropoff_lng,
                                     status, status_history, routing, idempotency_key, request_hash)
        SELECT md5('bench-' || n)::uuid, \(customer), \(UUID(uuidString: restaurantID)!), \(owner), '[{"menuItemId":"m1","name":"Soup","quantity":2,"unitPriceCents":900}]',
               1800, 'Senate Square', 60.1694, 24.9526, 'accepted', '[]', 'road', 'bench-' || n, 'bench'
        FROM generate_series(1, \(benchOrders)) AS n
        """,
        logger: Logger(label: "bench")
    )
    // The events' payload, read from a table by the script: pgbench would take the `:` of its
    // JSON for variables.
    try await client.query("CREATE TABLE tracking.bench_payload AS SELECT convert_to(\(payload), 'UTF8') AS payload", logger: Logger(label: "bench"))
    try await client.query("ALTER TABLE tracking.bench_payload OWNER TO \(unescaped: role)", logger: Logger(label: "bench"))
}
func transitionScript(notifying: Bool) -> String {
    // CAST, not `::`: pgbench would read `:uuid` as one of its variables.
    let order = "CAST(md5('bench-' || :n) AS uuid)"
    let event = { (type: String) in
        "INSERT INTO tracking.outbox (event_id, topic, key, type, source, subject, occurred_at, payload) SELECT gen_random_uuid(), 'tracking.orders', md5('bench-' || :n), '\(type)', '/splash/tracking', md5('bench-' || :n), now(), payload FROM tracking.bench_payload;"
    }
    return """
        \\set n random(1, \(benchOrders))
        BEGIN;
        SELECT set_config('app.user_id', '\(ownerID)', true), set_config('app.role', 'restaurant', true);
        SELECT id, status, version, status_history FROM tracking.orders WHERE id = \(order) FOR UPDATE;
        UPDATE tracking.orders SET status = CASE status WHEN 'accepted' THEN 'preparing' ELSE 'accepted' END, status_history = (CASE WHEN jsonb_array_length(status_history) >= 10 THEN status_history - 0 ELSE status_history END) || jsonb_build_array(jsonb_build_object('status', 'preparing', 'at', clock_timestamp(), 'by', jsonb_build_object('userId', '\(ownerID)', 'role', 'restaurant'))), version = version + 1, updated_at = clock_timestamp() WHERE id = \(order) RETURNING *;
        \(event("tracking.order.status-changed.v2"))
        \(event("tracking.order.status-changed.v1"))
        \(notifying ? "SELECT pg_notify('tracking_outbox', '');" : "")
        END;

        """
}
let byHand = try await PGBench.run(
    transitionScript(notifying: false),
    database: database,
    role: role,
    password: "bench",
    clients: transitionClients,
    seconds: seconds
)
let byHandNotifying = try await PGBench.run(
    transitionScript(notifying: true),
    database: database,
    role: role,
    password: "bench",
    clients: transitionClients,
    seconds: seconds
)

note(
    """

    == tracking: position ingest, batches of \(batch), \(connections) drivers (wrk -c\(connections) -d\(seconds)s; wrk, the gateway, tracking, Postgres and the broker share 2 cores) ==
      through the gateway   \(format(throughGateway.requestsPerSecond * Double(batch), 0)) positions/s   (\(format(throughGateway.requestsPerSecond, 0)) req/s, p50 \(format(throughGateway.p50, 2)) ms, p99 \(format(throughGateway.p99, 2)) ms)\(throughGateway.errors.map { "  \($0)" } ?? "")
      straight to tracking  \(format(direct.requestsPerSecond * Double(batch), 0)) positions/s   (\(format(direct.requestsPerSecond, 0)) req/s, p50 \(format(direct.p50, 2)) ms, p99 \(format(direct.p99, 2)) ms)\(direct.errors.map { "  \($0)" } ?? "")
    goal: ≥ 20,000 positions/s through the gateway
    == a position accepted → on the customer's orders:{id} WebSocket (a probe driver, a point every 50 ms) ==
      under that load   \(probeLatency.count) points   p50 \(format(percentile(probeLatency, 50))) ms   p99 \(format(percentile(probeLatency, 99))) ms   max \(format(probeLatency.last ?? 0)) ms
      idle (baseline)   \(idleLatency.count) points   p50 \(format(percentile(idleLatency, 50))) ms   p99 \(format(percentile(idleLatency, 99))) ms
    goal: p99 ≤ 250 ms under the load
    == order transitions through the gateway, \(transitionClients) clients, each with its outbox event ==
      \(format(Double(transitionLatencies.count) / transitionElapsed.seconds, 0)) transitions/s (with the placements between: \(format(placedAndMoved / transitionElapsed.seconds, 0)) writes/s)   p50 \(format(percentile(transitionLatencies, 50))) ms   p99 \(format(percentile(transitionLatencies, 99))) ms
      status-changed.v2 events in the outbox: \(statusEvents) (the probe's 4 and one per transition: \(transitionLatencies.count + 4))
      baseline, the transaction by hand (pgbench -M prepared -c\(transitionClients) -j2 -T\(seconds), as tracking's role, the services stopped):
        \(format(byHand.tps, 0)) tx/s   p50 \(format(byHand.latency.percentile(50))) ms   p99 \(format(byHand.latency.percentile(99))) ms
      the same with a NOTIFY in each (as before relays were woken in their process):
        \(format(byHandNotifying.tps, 0)) tx/s   p50 \(format(byHandNotifying.latency.percentile(50))) ms   p99 \(format(byHandNotifying.latency.percentile(99))) ms
    """
)

await keys.stop()
