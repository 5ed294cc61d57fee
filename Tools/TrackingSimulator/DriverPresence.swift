import Foundation
import Identity
import Logging
import PlainWebSocket
import RealtimeWire

/// A simulated driver's presence while on shift, as a driver's app keeps it: a Supabase Realtime
/// socket through the gateway, joined to `realtime:drivers` under the driver's id, tracking
/// `{"driverId", "onShift": true, "since"}` (the console's map shows who is on shift from it). The
/// socket's heartbeat goes every 20 s, with the session's fresh access token when it changed; a
/// dropped socket is opened again.
struct DriverPresence: Sendable {
    let account: SimulatedAccount
    /// The gateway's base URL (`http://…`).
    let gateway: String
    /// The `apikey` Supabase clients send (`GATEWAY_ANON_KEY`; any, in the local stack).
    let anonKey: String
    let logger: Logger

    static let topic = "realtime:drivers"

    func run() async {
        let since = ISO8601DateFormatter().string(from: Date())
        while !Task.isCancelled {
            do {
                let token = try await account.accessToken()
                guard let id = await account.id, let url = socketURL() else { return }
                _ = try await PlainWebSocketClient.run(url: url) { writer in
                    Task { await keep(writer, id: id, token: token, since: since) }
                } onText: { _ in
                }
            } catch is CancellationError {
                return
            } catch {
                logger.info("driver \(account.email)'s realtime socket failed; opening it again", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(2))
        }
    }

    /// Joins, tracks, then keeps the socket alive (and the join's token fresh) until it fails.
    private func keep(_ writer: PlainWebSocketClient.Writer, id: String, token: String, since: String) async {
        func send(_ ref: Int, _ topic: String, _ event: String, _ payload: JSONValue) async throws {
            let join = topic == Self.topic ? "1" : nil
            try await writer.send(
                text: PhoenixMessage.text(.v1, joinRef: join, ref: String(ref), topic: topic, event: event, payloadJSON: PhoenixMessage.json(payload))
            )
        }
        do {
            try await send(
                1,
                Self.topic,
                "phx_join",
                .object([
                    "access_token": .string(token),
                    "config": .object(["presence": .object(["key": .string(id), "enabled": .bool(false)]), "postgres_changes": .array([])]),
                ])
            )
            try await send(
                2,
                Self.topic,
                "presence",
                .object([
                    "type": .string("presence"), "event": .string("track"),
                    "payload": .object(["driverId": .string(id), "onShift": .bool(true), "since": .string(since)]),
                ])
            )
            var ref = 3
            var current = token
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(20))
                let fresh = try await account.accessToken()
                if fresh != current {
                    try await send(ref, Self.topic, "access_token", .object(["access_token": .string(fresh)]))
                    current = fresh
                    ref += 1
                }
                try await send(ref, "phoenix", "heartbeat", .object([:]))
                ref += 1
            }
        } catch {
            // The socket is gone: `run` opens another.
        }
    }

    private func socketURL() -> String? {
        guard var parts = URLComponents(string: gateway) else { return nil }
        parts.scheme = parts.scheme == "https" ? "wss" : "ws"
        parts.port = parts.port ?? (parts.scheme == "wss" ? 443 : 80)
        parts.path = "/realtime/v1/websocket"
        parts.queryItems = [URLQueryItem(name: "apikey", value: anonKey), URLQueryItem(name: "vsn", value: "1.0.0")]
        return parts.string
    }
}
