import EventBus
import Foundation
import ServiceKit

/// How the realtime endpoints behave; each variable is described in Services/Gateway/README.md.
struct RealtimeSettings: Sendable {
    /// Kafka, for the event feed (`KAFKA_BROKERS`, `KAFKA_FETCH_MAX_WAIT`, …).
    var events: EventBusSettings
    /// Names this replica's consumer group: `gateway-<replica>`.
    var replica: String
    /// Frames queued per client before positions are dropped and, for other events, the client
    /// is disconnected.
    var clientBuffer: Int
    /// The kernel send buffer of each realtime connection, in bytes: what a client that stops
    /// reading can leave unsent besides its queue (Linux otherwise grows it to megabytes).
    var socketBuffer: Int
    /// WebSocket ping interval (a client that misses a pong for as long is dropped) and SSE
    /// comment-line heartbeat interval.
    var heartbeat: Duration
    /// How long a WebSocket may stay open without sending its token.
    var authTimeout: Duration
    /// Events kept for SSE resumption: at most this many, at most this old.
    var replayEvents: Int
    var replayAge: Duration
    var maxConnections: Int
    /// Connection attempts per user (or IP before sign-in).
    var connectRateLimit: RateLimit
    /// How often this replica sends the others everything its clients track, and how long it keeps
    /// another replica's entry without hearing of it.
    var presenceHeartbeat: Duration
    var presenceExpiry: Duration

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        events = try EventBusSettings(from: reader)
        let host = ProcessInfo.processInfo.hostName.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "-" }
        replica = try reader.string("GATEWAY_REPLICA_ID", default: "\(host.isEmpty ? "gateway" : host)-\(UUID().uuidString.prefix(8).lowercased())")
        clientBuffer = try reader.integer("GATEWAY_REALTIME_BUFFER", default: 256, in: 1...100_000)
        socketBuffer = try reader.byteCount("GATEWAY_REALTIME_SOCKET_BUFFER", default: 64 << 10, in: 4 << 10...(16 << 20))
        heartbeat = try reader.duration("GATEWAY_REALTIME_HEARTBEAT", default: .seconds(15), minimum: .milliseconds(100))
        authTimeout = try reader.duration("GATEWAY_REALTIME_AUTH_TIMEOUT", default: .seconds(10), minimum: .milliseconds(100))
        replayEvents = try reader.integer("GATEWAY_REALTIME_REPLAY_EVENTS", default: 10_000, in: 0...1_000_000)
        replayAge = try reader.duration("GATEWAY_REALTIME_REPLAY_AGE", default: .seconds(300))
        maxConnections = try reader.integer("GATEWAY_REALTIME_MAX_CONNECTIONS", default: 20_000, in: 1...1_000_000)
        connectRateLimit = try reader.rateLimit("GATEWAY_RATE_LIMIT_REALTIME", default: RateLimit(count: 30, window: .seconds(60)))
        presenceHeartbeat = try reader.duration("GATEWAY_PRESENCE_HEARTBEAT", default: .seconds(10), minimum: .milliseconds(100))
        presenceExpiry = try reader.duration("GATEWAY_PRESENCE_EXPIRY", default: .seconds(30), minimum: .milliseconds(300))
        guard presenceExpiry > presenceHeartbeat * 2 else {
            throw ConfigurationError(
                variable: "GATEWAY_PRESENCE_EXPIRY",
                expected: "more than twice GATEWAY_PRESENCE_HEARTBEAT",
                problem: .conflicting(reason: "another replica's live entries would expire between its heartbeats")
            )
        }
    }
}
