import Foundation
import Logging
import NIOCore
import NIOWebSocket
import RealtimeWire
import ServiceKit
import Synchronization

extension SocketEnding {
    /// Anything but a token before the token, or no token in time.
    fileprivate static let unauthenticated = SocketEnding(
        code: RealtimeCloseCode.unauthorized,
        reason: #"send {"op":"auth","token":…} first"#,
        metric: "unauthenticated"
    )
}

/// One `/v1/realtime` connection, from its first message to its close, over a `RealtimeSocket`:
/// the token (in the upgrade or as the first message), subscriptions and pings; the deadline
/// (authenticating, then the token's expiry, moved on by every fresh token) on the socket's timer.
final class WebSocketSession: RealtimeSocketSession {
    let hub: RealtimeHub
    let gate: RealtimeGate
    let settings: RealtimeSettings
    let endpoints: RealtimeController
    let socket: RealtimeSocket
    let logger: Logger
    /// The upgrade request's bearer token, if it had one.
    private let headerToken: String?
    /// The client's address, its rate-limit key until it has authenticated.
    private let caller: String
    /// The `channels` query parameter.
    private let query: String?
    private let openedAt = ContinuousClock.now

    private struct State {
        /// `nil` until the client has authenticated.
        var viewer: Viewer?
        var client: RealtimeHub.Client?
        /// The session's place in `LiveSessions`, once its user is known.
        var registration: LiveSessions.Registration?
    }

    private let state = Mutex(State())

    init(endpoints: RealtimeController, socket: RealtimeSocket, token: String?, caller: String, channels: String?) {
        self.hub = endpoints.hub
        self.gate = endpoints.gate
        self.settings = endpoints.settings
        self.endpoints = endpoints
        self.socket = socket
        self.logger = endpoints.logger
        self.headerToken = token
        self.caller = caller
        self.query = channels
    }

    func opened() async {
        var viewer: Viewer?
        do {
            if let headerToken { viewer = try await self.viewer(headerToken) }
            try endpoints.room(for: viewer.map { "user:\($0.user)" } ?? "ip:\(caller)")
        } catch let ending as SocketEnding {
            return socket.close(ending)
        } catch {
            let problem = error as? Problem
            return socket.close(SocketEnding(code: RealtimeCloseCode.tryAgainLater, reason: problem?.detail ?? "try again later", metric: "refused"))
        }
        await endpoints.capSendBuffer(of: socket.channel)
        let client = hub.connect(transport: .websocket, queueCapacity: settings.clientBuffer, connection: socket.channel)
        state.withLock { $0.client = client }
        socket.attach(client.queue) { [metrics = hub.metrics] in metrics.pushed(.websocket, after: $0) }
        if let viewer {
            await authenticated(viewer, client: client)
        } else {
            armDeadline()
        }
    }

    func received(_ message: SocketMessage) async {
        guard let client = state.withLock({ $0.client }) else { return }
        if let ending = await handle(message, client: client) { socket.close(ending) }
    }

    func closed(_ ending: SocketEnding) {
        let (client, registration) = state.withLock { ($0.client, $0.registration) }
        if let registration { gate.sessions.unregister(registration) }
        if let client { hub.disconnect(client, reason: ending.metric) }
        logger.debug("realtime connection closed", metadata: ["reason": "\(ending.metric)"])
    }

    /// Sets the socket's timer for the session's deadline: the end of the time to authenticate,
    /// then the token's expiry.
    private func armDeadline() {
        let expiresAt = state.withLock { $0.viewer?.expiresAt }
        let deadline =
            expiresAt.map { ContinuousClock.now + .milliseconds(Int64($0.timeIntervalSinceNow * 1_000) + 1) } ?? openedAt + settings.authTimeout
        socket.setDeadline(deadline) { [self] in
            switch state.withLock({ $0.viewer?.expiresAt }) {
            case nil:
                socket.close(
                    .unauthenticated
                )
            case let expiresAt? where expiresAt.timeIntervalSinceNow <= 0:
                socket.close(SocketEnding(code: RealtimeCloseCode.tokenExpired, reason: "access token expired", metric: "token_expired"))
            case _?:
                armDeadline()
            }
        }
    }

    /// The client proved who it is: greet it and subscribe the channels of its URL.
    private func authenticated(_ viewer: Viewer, client: RealtimeHub.Client) async {
        let registration = gate.sessions.register(user: viewer.user) { [socket] in
            socket.close(SocketEnding(code: RealtimeCloseCode.unauthorized, reason: "the account has been deleted", metric: "user_deleted"))
        }
        state.withLock {
            $0.viewer = viewer
            $0.registration = registration
        }
        armDeadline()
        send(.ready(viewer), to: client)
        for name in RealtimeChannel.names(in: query) {
            await subscribe(name, ref: nil, client: client, viewer: viewer)
        }
    }

    private func viewer(_ token: String) async throws -> Viewer {
        do {
            return try await gate.viewer(token: token)
        } catch .expired {
            throw SocketEnding(code: RealtimeCloseCode.tokenExpired, reason: "access token expired", metric: "token_expired")
        } catch .keysUnavailable {
            throw SocketEnding(code: RealtimeCloseCode.tryAgainLater, reason: "access tokens cannot be checked just now", metric: "keys_unavailable")
        } catch {
            throw SocketEnding(code: RealtimeCloseCode.unauthorized, reason: "invalid access token", metric: "unauthenticated")
        }
    }

    /// Handles one client message; returns an ending when it ends the session.
    private func handle(_ message: SocketMessage, client: RealtimeHub.Client) async -> SocketEnding? {
        let request: ClientMessage
        do {
            guard case .text(let text) = message else { throw CocoaError(.coderInvalidValue) }
            request = try JSONDecoder().decode(ClientMessage.self, from: Data(text.utf8))
        } catch {
            send(.error("bad_message", #"Send JSON text messages with an "op": auth, subscribe, unsubscribe or ping."#), to: client)
            return nil
        }
        guard let viewer = state.withLock({ $0.viewer }) else {
            // Nothing but the token before the token.
            guard request.op == .auth, let token = request.token else {
                return .unauthenticated
            }
            do {
                await authenticated(try await self.viewer(token), client: client)
                return nil
            } catch {
                return error as? SocketEnding
                    ?? SocketEnding(code: RealtimeCloseCode.unauthorized, reason: "invalid access token", metric: "unauthenticated")
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
                return SocketEnding(code: RealtimeCloseCode.userChanged, reason: "a token for another user", metric: "user_changed")
            }
            state.withLock { $0.viewer = fresh }
            armDeadline()
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
}
