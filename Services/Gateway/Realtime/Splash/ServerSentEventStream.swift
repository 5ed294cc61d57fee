import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// Writes one client's events as Server-Sent Events (`text/event-stream`).
///
/// Each event is `id:` (the CloudEvent id, for `Last-Event-ID`), `event:` (its type) and `data:`
/// (the CloudEvent JSON). A comment line goes out every `heartbeat` so proxies keep the stream
/// open. The stream ends with an `event: close` whose data says why: `token_expired` (reconnect
/// with a fresh token and `Last-Event-ID`), `slow_client`, `shutdown` (this gateway is going
/// away: reconnect with `Last-Event-ID`), or `user_deleted` (the account is gone).
struct ServerSentEventStream: Sendable {
    let hub: RealtimeHub
    let client: RealtimeHub.Client
    let viewer: Viewer
    let heartbeat: Duration
    /// Where the stream registers, so that its user's deletion ends it (`user_deleted`).
    let sessions: LiveSessions

    func write(to writer: inout any ResponseBodyWriter, resumption: RealtimeHub.Resumption?, lastEventID: String?) async throws {
        var reason = "client_closed"
        // An overflowed queue makes it `slow_client` however the stream ended: a write stuck on a
        // full socket fails when the hub closes the connection, and that client was too slow, not gone.
        defer { hub.disconnect(client, reason: client.queue.ending == .overflowed ? "slow_client" : reason) }
        // Clients retry after 3 s when the connection drops.
        var preface = "retry: 3000\n: connected\n\n"
        if resumption == .unavailable {
            let id = (lastEventID ?? "").prefix(64).filter { $0 != "\n" && $0 != "\r" }
            preface += Self.frame(
                event: "replay-unavailable",
                data: #"{"lastEventId":"\#(id)","message":"Events after your last one have left the replay window; load the current state again."}"#
            )
        }
        try await writer.write(ByteBuffer(string: preface))

        let queue = client.queue
        let registration = sessions.register(user: viewer.user) {
            _ = queue.offer(
                .init(eventID: nil, text: Self.frame(event: "close", data: #"{"reason":"user_deleted"}"#), supersedingKey: nil, enqueuedAt: .now)
            )
            queue.close()
        }
        defer { sessions.unregister(registration) }
        let expiresAt = viewer.expiresAt
        let heartbeat = self.heartbeat
        let expired = try await withThrowingTaskGroup(of: Void.self, returning: Bool.self) { group in
            group.addTask {
                // Heartbeats until the token expires, then the closing frame. Heartbeats replace
                // each other in the queue, so they never pile up behind a slow client.
                while !Task.isCancelled {
                    let untilExpiry = expiresAt.timeIntervalSinceNow
                    if untilExpiry <= 0 {
                        _ = queue.offer(
                            .init(
                                eventID: nil,
                                text: Self.frame(event: "close", data: #"{"reason":"token_expired"}"#),
                                supersedingKey: nil,
                                enqueuedAt: .now
                            )
                        )
                        queue.close()
                        return
                    }
                    try await Task.sleep(for: min(heartbeat, .milliseconds(Int64(untilExpiry * 1_000) + 1)))
                    _ = queue.offer(.init(eventID: nil, text: ": heartbeat\n\n", supersedingKey: "heartbeat", enqueuedAt: .now))
                }
            }
            // The stream ends when the gateway begins shutting down (the client is told, and
            // reconnects elsewhere), or when the connection task is cancelled.
            try await withGracefulShutdownHandler {
                while let frame = await withTaskCancellationHandler(operation: { await queue.next() }, onCancel: { queue.close() }) {
                    // Only the Supabase Realtime hub queues bytes; every frame here is text.
                    guard case .text(let text) = frame.content else { continue }
                    if let id = frame.eventID {
                        try await writer.write(ByteBuffer(string: "id: \(id)\nevent: \(frame.eventType ?? "message")\ndata: \(text)\n\n"))
                        hub.metrics.pushed(.sse, after: .now - frame.enqueuedAt)
                    } else {
                        try await writer.write(ByteBuffer(string: text))
                    }
                }
            } onGracefulShutdown: {
                queue.close(.shuttingDown)
            }
            group.cancelAll()
            return expiresAt.timeIntervalSinceNow <= 0
        }
        if queue.ending == .overflowed {
            try await writer.write(ByteBuffer(string: Self.frame(event: "close", data: #"{"reason":"slow_client"}"#)))
        } else if queue.ending == .shuttingDown {
            reason = "shutdown"
            try await writer.write(ByteBuffer(string: Self.frame(event: "close", data: #"{"reason":"shutdown"}"#)))
        } else if expired {
            reason = "token_expired"
        }
        try await writer.finish(nil)
    }

    static func frame(event: String, data: String) -> String {
        "event: \(event)\ndata: \(data)\n\n"
    }
}
