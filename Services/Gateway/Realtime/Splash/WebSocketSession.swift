import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RealtimeWire
import ServiceKit
import Synchronization

/// One `/v1/realtime` connection, from its first message to its close.
///
/// Three tasks run side by side: the reader (client messages: token, subscriptions, pings — and,
/// inside the WebSocket library, pong replies to our heartbeat pings), the writer (the client's
/// queue to the socket) and the watch on the token's expiry. The first to decide the connection is
/// over sets the close code.
struct WebSocketSession {
    let hub: RealtimeHub
    let gate: RealtimeGate
    let settings: RealtimeSettings
    let endpoints: RealtimeController
    let channel: any Channel
    let logger: Logger

    init(endpoints: RealtimeController, channel: any Channel) {
        self.hub = endpoints.hub
        self.gate = endpoints.gate
        self.settings = endpoints.settings
        self.endpoints = endpoints
        self.channel = channel
        self.logger = endpoints.logger
    }

    /// What ends a session, and the close frame it sends.
    private struct Ending: Error {
        let code: WebSocketErrorCode
        let reason: String
        let metric: String

        static let slowClient = Ending(code: RealtimeCloseCode.slowClient, reason: "client too slow: event buffer full", metric: "slow_client")
    }

    private final class Shared: Sendable {
        /// `nil` until the client has authenticated.
        let viewer = Mutex<Viewer?>(nil)
        let ending = Mutex<Ending?>(nil)
        /// The session's place in `LiveSessions`, once its user is known.
        let registration = Mutex<LiveSessions.Registration?>(nil)

        /// Records the first ending; later ones are ignored.
        func end(_ ending: Ending) {
            self.ending.withLock { if $0 == nil { $0 = ending } }
        }
    }

    /// - Parameters:
    ///   - headerToken: the upgrade request's bearer token, if it had one.
    ///   - caller: the client's address, its rate-limit key until it has authenticated.
    ///   - query: the `channels` query parameter.
    func run(
        inbound: WebSocketInboundStream,
        outbound: WebSocketOutboundWriter,
        token headerToken: String?,
        caller: String,
        channels query: String?
    ) async {
        let opened = ContinuousClock.now
        var viewer: Viewer?
        do {
            if let headerToken { viewer = try await self.viewer(headerToken) }
            try endpoints.room(for: viewer.map { "user:\($0.user)" } ?? "ip:\(caller)")
        } catch let ending as Ending {
            await close(outbound, ending, client: nil)
            return
        } catch {
            let problem = error as? Problem
            await close(
                outbound,
                Ending(code: RealtimeCloseCode.tryAgainLater, reason: problem?.detail ?? "try again later", metric: "refused"),
                client: nil
            )
            return
        }
        await endpoints.capSendBuffer(of: channel)
        let client = hub.connect(transport: .websocket, queueCapacity: settings.clientBuffer, connection: channel)
        let shared = Shared()
        if let viewer { await authenticated(viewer, channels: query, client: client, shared: shared) }

        if shared.ending.withLock({ $0 }) == nil {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    // The reader: ends when the client closes or the connection drops.
                    do {
                        for try await message in inbound.messages(maxSize: 16 << 10) {
                            if let ending = await handle(message, channels: query, client: client, shared: shared) {
                                shared.end(ending)
                                return
                            }
                        }
                    } catch {}
                    shared.end(Ending(code: .normalClosure, reason: "", metric: "client_closed"))
                }
                group.addTask {
                    // The writer: ends when the queue does (overflow, or the session is over), or
                    // when a write fails. An overflow is told below, whoever ends the session.
                    while let frame = await client.queue.next() {
                        do {
                            try await outbound.write(frame.content.webSocketFrame)
                        } catch {
                            shared.end(Ending(code: .goingAway, reason: "", metric: "write_failed"))
                            return
                        }
                        if frame.eventID != nil { hub.metrics.pushed(.websocket, after: .now - frame.enqueuedAt) }
                    }
                }
                group.addTask {
                    // The deadline: authenticating, then the token's expiry, moved on by every
                    // fresh token.
                    while !Task.isCancelled {
                        let expiresAt = shared.viewer.withLock { $0?.expiresAt }
                        guard let expiresAt else {
                            if ContinuousClock.now - opened >= settings.authTimeout {
                                shared.end(
                                    Ending(
                                        code: RealtimeCloseCode.unauthorized,
                                        reason: #"send {"op":"auth","token":…} first"#,
                                        metric: "unauthenticated"
                                    )
                                )
                                return
                            }
                            try? await Task.sleep(for: min(.milliseconds(100), settings.authTimeout))
                            continue
                        }
                        let wait = expiresAt.timeIntervalSinceNow
                        if wait <= 0 {
                            shared.end(Ending(code: RealtimeCloseCode.tokenExpired, reason: "access token expired", metric: "token_expired"))
                            return
                        }
                        try? await Task.sleep(for: .milliseconds(Int64(min(wait, 3_600) * 1_000) + 1))
                    }
                }
                // Whoever finishes first decides; then stop the others.
                await group.next()
                client.queue.close()
                group.cancelAll()
            }
        }
        if let registration = shared.registration.withLock({ $0 }) { gate.sessions.unregister(registration) }
        // A client whose queue overflowed was too slow, however its session then ended: with the
        // writer stuck on a full socket, the hub closes the connection, and the reader or the
        // writer may notice that first.
        let ending =
            client.queue.ending == .overflowed
            ? .slowClient : shared.ending.withLock { $0 } ?? Ending(code: .normalClosure, reason: "", metric: "client_closed")
        await close(outbound, ending, client: client)
    }

    /// The client proved who it is: greet it and subscribe the channels of its URL.
    private func authenticated(_ viewer: Viewer, channels query: String?, client: RealtimeHub.Client, shared: Shared) async {
        shared.viewer.withLock { $0 = viewer }
        let registration = gate.sessions.register(user: viewer.user) {
            shared.end(Ending(code: RealtimeCloseCode.unauthorized, reason: "the account has been deleted", metric: "user_deleted"))
            client.queue.close()
        }
        shared.registration.withLock { $0 = registration }
        send(.ready(viewer), to: client)
        for name in RealtimeChannel.names(in: query) {
            await subscribe(name, ref: nil, client: client, viewer: viewer)
        }
    }

    private func viewer(_ token: String) async throws -> Viewer {
        do {
            return try await gate.viewer(token: token)
        } catch .expired {
            throw Ending(code: RealtimeCloseCode.tokenExpired, reason: "access token expired", metric: "token_expired")
        } catch .keysUnavailable {
            throw Ending(code: RealtimeCloseCode.tryAgainLater, reason: "access tokens cannot be checked just now", metric: "keys_unavailable")
        } catch {
            throw Ending(code: RealtimeCloseCode.unauthorized, reason: "invalid access token", metric: "unauthenticated")
        }
    }

    /// Handles one client message; returns an ending when it ends the session.
    private func handle(_ message: WebSocketMessage, channels query: String?, client: RealtimeHub.Client, shared: Shared) async -> Ending? {
        let request: ClientMessage
        do {
            guard case .text(let text) = message else { throw CocoaError(.coderInvalidValue) }
            request = try JSONDecoder().decode(ClientMessage.self, from: Data(text.utf8))
        } catch {
            send(.error("bad_message", #"Send JSON text messages with an "op": auth, subscribe, unsubscribe or ping."#), to: client)
            return nil
        }
        guard let viewer = shared.viewer.withLock({ $0 }) else {
            // Nothing but the token before the token.
            guard request.op == .auth, let token = request.token else {
                return Ending(code: RealtimeCloseCode.unauthorized, reason: #"send {"op":"auth","token":…} first"#, metric: "unauthenticated")
            }
            do {
                await authenticated(try await self.viewer(token), channels: query, client: client, shared: shared)
                return nil
            } catch {
                return error as? Ending ?? Ending(code: RealtimeCloseCode.unauthorized, reason: "invalid access token", metric: "unauthenticated")
            }
        }
        switch request.op {
        case .ping:
            send(.pong, to: client)
        case .subscribe:
            guard let name = request.channel else {
                send(.error("bad_message", "subscribe needs a channel.", ref: request.ref), to: client)
                return nil
            }
            await subscribe(name, ref: request.ref, client: client, viewer: viewer)
        case .unsubscribe:
            guard let name = request.channel, let channel = RealtimeChannel(name: name, user: viewer.user) else {
                send(.error("unknown_channel", "unsubscribe needs a channel you follow.", channel: request.channel, ref: request.ref), to: client)
                return nil
            }
            hub.unsubscribe(client, from: channel)
            send(.unsubscribed(name, ref: request.ref), to: client)
        case .auth:
            guard let token = request.token else {
                send(.error("bad_message", "auth needs a token.", ref: request.ref), to: client)
                return nil
            }
            let fresh: Viewer
            do {
                fresh = try await self.viewer(token)
            } catch {
                // A bad refresh is reported; the current token stays until it expires.
                send(
                    .error("invalid_token", "The new access token is not valid; the current one stays until it expires.", ref: request.ref),
                    to: client
                )
                return nil
            }
            guard fresh.user == viewer.user else {
                return Ending(code: RealtimeCloseCode.userChanged, reason: "a token for another user", metric: "user_changed")
            }
            shared.viewer.withLock { $0 = fresh }
            send(.ready(fresh), to: client)
        }
        return nil
    }

    private func subscribe(_ name: String, ref: String?, client: RealtimeHub.Client, viewer: Viewer) async {
        switch await gate.channel(named: name, for: viewer) {
        case .success(let channel):
            hub.subscribe(client, to: channel)
            send(.subscribed(channel, ref: ref), to: client)
        case .failure(let refusal):
            send(.error(refusal.code, refusal.message, channel: name, ref: ref), to: client)
        }
    }

    private func send(_ message: ServerMessage, to client: RealtimeHub.Client) {
        _ = client.queue.offer(.init(eventID: nil, text: message.text, supersedingKey: nil, enqueuedAt: .now))
    }

    /// Sends the close frame; a client that does not take it within `RealtimeHub.overflowGrace`
    /// (its socket buffer is full) has its connection closed under it.
    private func close(_ outbound: WebSocketOutboundWriter, _ ending: Ending, client: RealtimeHub.Client?) async {
        if let client { hub.disconnect(client, reason: ending.metric) }
        let channel = self.channel
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await outbound.close(ending.code, reason: ending.reason) }
            group.addTask {
                // Closing the connection also ends a close frame stuck behind a full socket; the
                // group cannot finish before that write does.
                guard (try? await Task.sleep(for: RealtimeHub.overflowGrace)) != nil else { return }
                try? await channel.close()
            }
            await group.next()
            group.cancelAll()
        }
        logger.debug("realtime connection closed", metadata: ["reason": "\(ending.metric)"])
    }
}

extension ClientQueue.Frame.Content {
    /// The WebSocket message this content is written as.
    var webSocketFrame: WebSocketOutboundWriter.OutboundFrame {
        switch self {
        case .text(let text): .text(text)
        case .binary(let bytes): .binary(bytes)
        }
    }
}
