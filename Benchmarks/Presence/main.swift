import AsyncHTTPClient
import Foundation
import Kafka
import LocalStack
import Logging
import ServiceKit
import TestSupport

// Presence at scale (`make bench-presence`): `--clients` Supabase Realtime clients on one topic
// of one gateway, presence on; then, round after round, one more client joins and tracks, and the
// delay from its track to each listener's `presence_diff` naming it is timed (p50, p99, max over
// every listener of every round). Baseline in the same run, on the same sockets: a broadcast
// from the newcomer to all of them (`realtime.broadcasts` is the other fan-out the hub has). The
// gateway runs as its own process (a release build) on the test support's embedded broker; the
// clients share the same two cores.
let clients = BenchmarkArguments.integer("--clients", default: 1_000)
let rounds = BenchmarkArguments.integer("--rounds", default: 10)
let runs = BenchmarkArguments.integer("--runs", default: 3)

let kafka = try await TestKafka.shared.running()
// Publishes a token key set, which the gateway needs to start; the clients join anonymously.
let keys = FakePhotoCatalog(images: [:])
try await keys.start()
let gateway = try await ServiceProcess(
    "gateway",
    environment: [
        "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms", "LOG_LEVEL": "error",
        "GATEWAY_RATE_LIMIT_REALTIME": "100000000/1m", "GATEWAY_REALTIME_MAX_CONNECTIONS": String(clients * 2 + 100),
        "GATEWAY_REALTIME_BUFFER": "4096", "GATEWAY_AUTH_URL": keys.baseURL, "GATEWAY_JWKS_URL": keys.baseURL + "/jwks.json",
        "GATEWAY_JWT_ISSUER": "http://localhost:8080/auth/v1",
    ]
)
try await waitUntilReady("the gateway's event feed", timeout: .seconds(60)) {
    (try? await HTTPClient.shared.get(url: "\(gateway.baseURL)/readyz").get().status.code) == 200
}
let url = gateway.baseURL.replacingOccurrences(of: "http://", with: "ws://") + "/realtime/v1/websocket?apikey=anon&vsn=1.0.0"

func frame(_ join: String?, _ ref: String, _ topic: String, _ event: String, _ payload: [String: Any]) throws -> String {
    let value: [String: Any] = ["join_ref": join ?? NSNull(), "ref": ref, "topic": topic, "event": event, "payload": payload]
    return String(decoding: try JSONSerialization.data(withJSONObject: value), as: UTF8.self)
}

func joined(_ topic: String, key: String, presence: Bool) async throws -> RealtimeSocket {
    let socket = RealtimeSocket(url: url)
    try await socket.send(
        try frame("1", "1", topic, "phx_join", ["config": ["presence": ["key": key, "enabled": presence], "broadcast": ["self": false]]])
    )
    _ = try await socket.phoenix(within: .seconds(60)) { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "1" }
    return socket
}

/// The delay, in ms, from `start` to each listener's first message holding `marker`.
func delays(_ listeners: [RealtimeSocket], marker: String, after start: ContinuousClock.Instant) async throws -> [Double] {
    var found: [Double] = []
    let deadline = ContinuousClock.now + .seconds(30)
    for listener in listeners {
        while true {
            let messages = listener.messages
            if let index = messages.firstIndex(where: { $0.contains(marker) }) {
                let arrival = listener.arrivalTimes[index]
                let elapsed = start.duration(to: arrival)
                found.append(Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15)
                break
            }
            guard ContinuousClock.now < deadline else { throw BenchmarkFailure("a listener never got \(marker)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
    return found
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func note(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func format(_ value: Double) -> String { String(format: "%.1f", value) }
func summary(_ values: [Double]) -> String {
    let sorted = values.sorted()
    func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * q))] }
    return "p50 \(format(at(0.5))) ms   p99 \(format(at(0.99))) ms   max \(format(sorted.last ?? 0)) ms"
}

note("== presence: \(clients) clients on one topic, one joining and tracking per round, \(rounds) rounds per run ==")
for run in 1...runs {
    let topic = "realtime:lobby-\(run)-\(UUID().uuidString.prefix(6))"
    var listeners: [RealtimeSocket] = []
    for batch in stride(from: 0, to: clients, by: 100) {
        listeners += try await withThrowingTaskGroup(of: RealtimeSocket.self) { group in
            for index in batch..<min(batch + 100, clients) { group.addTask { try await joined(topic, key: "listener-\(index)", presence: true) } }
            var joinedSockets: [RealtimeSocket] = []
            for try await socket in group { joinedSockets.append(socket) }
            return joinedSockets
        }
    }
    var presence: [Double] = []
    var broadcast: [Double] = []
    for round in 1...rounds {
        let key = "newcomer-\(run)-\(round)-\(UUID().uuidString.prefix(6))"
        let newcomer = try await joined(topic, key: key, presence: true)
        let tracked = ContinuousClock.now
        try await newcomer.send(try frame("1", "2", topic, "presence", ["type": "presence", "event": "track", "payload": ["at": round]]))
        presence += try await delays(listeners, marker: "\"\(key)\"", after: tracked)
        let marker = "shout-\(key)"
        let shouted = ContinuousClock.now
        try await newcomer.send(try frame("1", "3", topic, "broadcast", ["type": "broadcast", "event": marker, "payload": [:]]))
        broadcast += try await delays(listeners, marker: marker, after: shouted)
        await newcomer.disconnect()
        try await Task.sleep(for: .milliseconds(300))
    }
    note("run \(run): presence join seen by all \(clients): \(summary(presence))")
    note("run \(run): broadcast to all \(clients) (baseline):  \(summary(broadcast))")
    for listener in listeners { await listener.disconnect() }
}
note("goal: a join seen by all within p99 ≤ 250 ms")
await gateway.stop()
