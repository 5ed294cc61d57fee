import Contracts
import Foundation
import Identity
import Logging
import NIOCore
import NIOWebSocket
import RealtimeWire
import Synchronization

/// One `/realtime/v1/websocket` connection: Supabase Realtime's Phoenix channels, as supabase-js,
/// supabase-swift and realtime-py speak them (README, "Supabase Realtime"), over a
/// `RealtimeSocket`: heartbeats, joins, leaves, fresh tokens, broadcasts and presence. A join whose
/// token expires is ended by the hub's watch over all connections (`ChangeHub.endLapsedJoins`).
final class SupabaseRealtimeSession: RealtimeSocketSession {
    let endpoints: RealtimeController
    let hub: ChangeHub
    let anonKey: String?
    let socket: RealtimeSocket
    private let apikey: String?
    private let version: String?
    private let caller: String
    /// Set once the connection is admitted.
    private let client = Mutex<ChangeHub.Client?>(nil)

    init(endpoints: RealtimeController, socket: RealtimeSocket, apikey: String?, version: String?, caller: String) {
        self.endpoints = endpoints
        self.hub = endpoints.changes
        self.anonKey = endpoints.anonKey
        self.socket = socket
        self.apikey = apikey
        self.version = version
        self.caller = caller
    }

    func opened() async {
        guard let apikey, !apikey.isEmpty, anonKey == nil || apikey == anonKey else {
            return socket.close(SocketEnding(code: RealtimeCloseCode.unauthorized, reason: "Invalid API key", metric: "refused"))
        }
        guard let version = PhoenixMessage.Version(rawValue: self.version ?? "1.0.0") else {
            return socket.close(.protocolError("vsn must be 1.0.0 or 2.0.0"))
        }
        do {
            try endpoints.room(for: "ip:\(caller)")
        } catch {
            return socket.close(SocketEnding(code: RealtimeCloseCode.tryAgainLater, reason: error.detail ?? "try again later", metric: "refused"))
        }
        await endpoints.capSendBuffer(of: socket.channel)
        let client = hub.connect(version: version, queueCapacity: endpoints.settings.clientBuffer, connection: socket.channel)
        self.client.withLock { $0 = client }
        socket.attach(client.queue) { [metrics = hub.metrics] in metrics.pushed(.supabase, after: $0) }
    }

    func received(_ message: SocketMessage) async {
        guard let client = client.withLock({ $0 }), let apikey else { return }
        switch message {
        case .text(let text): await handle(text, client: client, apikey: apikey)
        case .binary(let bytes): await handle(bytes, client: client)
        }
    }

    func closed(_ ending: SocketEnding) {
        guard let client = client.withLock({ $0 }) else { return }
        hub.disconnect(client, reason: ending.metric)
    }

    // MARK: Messages

    private func handle(_ text: String, client: ChangeHub.Client, apikey: String) async {
        let message: PhoenixMessage
        do {
            message = try PhoenixMessage(text: text)
        } catch {
            return refuseUnreadable("unreadable message: send Phoenix frames (vsn 1.0.0 objects or 2.0.0 arrays)", client: client)
        }
        switch (message.topic, message.event) {
        case ("phoenix", "heartbeat"):
            reply(message, .ok([:]), to: client)
        case (_, "phx_join"):
            await join(message, client: client, apikey: apikey)
        case (_, "phx_leave"):
            let join = hub.join(of: client, topic: message.topic)
            hub.leave(
                client,
                topic: message.topic,
                farewell: [
                    Self.replyText(message, .ok([:]), version: client.version),
                    PhoenixMessage.text(
                        client.version,
                        joinRef: join?.joinRef ?? message.joinRef,
                        ref: nil,
                        topic: message.topic,
                        event: "phx_close",
                        payloadJSON: "{}"
                    ),
                ]
            )
        case (_, "access_token"):
            await refresh(message, client: client, apikey: apikey)
        case (_, "broadcast"):
            await send(.text(message.payload), as: message, from: client)
        case (_, "presence"):
            await presence(message, client: client)
        default:
            reply(message, .error("unknown event \(message.event.prefix(60))"), to: client)
        }
    }

    /// A binary frame: a user broadcast (supabase-js, vsn 2.0.0); anything else is answered
    /// with a `phx_error` saying so.
    private func handle(_ bytes: ByteBuffer, client: ChangeHub.Client) async {
        do {
            let push = try UserBroadcastFrame.decode(bytes)
            await send(
                push.broadcast,
                as: PhoenixMessage(joinRef: push.joinRef, ref: push.ref, topic: push.topic, event: "broadcast", payload: .object([:])),
                from: client
            )
        } catch {
            refuseUnreadable("unreadable binary message: \(error.reason)", client: client)
        }
    }

    /// Tells the client a frame of its could not be read (`phx_error` on the `phoenix` topic).
    private func refuseUnreadable(_ reason: String, client: ChangeHub.Client) {
        let error = PhoenixMessage(joinRef: nil, ref: nil, topic: "phoenix", event: "phx_error", payload: .object(["reason": .string(reason)]))
        _ = client.send(error.text(client.version))
    }

    /// Sends a client's broadcast to the others on its channel, here and on the other replicas;
    /// `message` is the frame it came in (its topic and refs), answered when the join asked for
    /// acknowledgements.
    private func send(_ broadcast: Broadcast, as message: PhoenixMessage, from client: ChangeHub.Client) async {
        guard let join = hub.join(of: client, topic: message.topic) else {
            reply(message, .error("join the channel first"), to: client)
            return
        }
        do {
            try await endpoints.broadcasts.send(topic: message.topic, broadcast, from: client.id)
            if join.acknowledgesBroadcasts, message.ref != nil { reply(message, .ok([:]), to: client) }
        } catch {
            // Delivered here; the other replicas could not be told.
            if join.acknowledgesBroadcasts, message.ref != nil { reply(message, .error("the broadcast could not reach every gateway"), to: client) }
        }
    }

    /// The longest presence key, and the largest state one track may carry (as JSON).
    static let maxPresenceKey = 256
    static let maxPresenceState = 4_096

    /// `{"type":"presence","event":"track"|"untrack","payload":{…}}` (realtime-py leaves out
    /// `type`): the join's presence tracked, replaced or ended here and on the other replicas.
    private func presence(_ message: PhoenixMessage, client: ChangeHub.Client) async {
        switch message.payload["event"]?.stringValue {
        case "track":
            guard case .object(let state) = message.payload["payload"] ?? .object([:]) else {
                return reply(message, .error("track takes an object: the state to share"), to: client)
            }
            guard PhoenixMessage.json(JSONValue.object(state)).utf8.count <= Self.maxPresenceState else {
                return reply(message, .error("a presence state is at most \(Self.maxPresenceState) bytes of JSON"), to: client)
            }
            switch hub.track(client, topic: message.topic, state: state, origin: endpoints.presence.replica) {
            case .success(let tracked):
                reply(message, .ok([:]), to: client)
                await endpoints.presence.tracked(tracked.entry, replacing: tracked.replaced)
            case .failure(let refusal):
                reply(message, .error(refusal.reason), to: client)
            }
        case "untrack":
            switch hub.untrack(client, topic: message.topic) {
            case .success(let entry):
                reply(message, .ok([:]), to: client)
                if let entry { await endpoints.presence.untracked([entry]) }
            case .failure(let refusal):
                reply(message, .error(refusal.reason), to: client)
            }
        default:
            reply(message, .error("a presence message's event is track or untrack"), to: client)
        }
    }

    private func join(_ message: PhoenixMessage, client: ChangeHub.Client, apikey: String) async {
        guard message.topic.hasPrefix("realtime:"), message.topic.count > "realtime:".count else {
            reply(message, .error("a channel's topic is realtime:<name>"), to: client)
            return
        }
        let viewer: Viewer?
        switch await self.viewer(message.payload["access_token"]?.stringValue, apikey: apikey) {
        case .success(let found): viewer = found
        case .failure(let refusal):
            reply(message, .error(refusal.reason), to: client)
            return
        }
        let config = message.payload["config"] ?? .object([:])
        let requested = config["postgres_changes"]?.arrayValue ?? []
        var bindings: [ChangeHub.Binding] = []
        var echoed: [JSONValue] = []
        for (index, binding) in requested.enumerated() {
            switch await decide(binding, id: Self.bindingID(client: client, topic: message.topic, index: index), viewer: viewer) {
            case .success(let decided):
                bindings.append(decided)
                if case .object(var fields) = binding {
                    fields["id"] = .int(decided.id)
                    echoed.append(.object(fields))
                }
            case .failure(let refusal):
                reply(message, .error(refusal.reason), to: client)
                return
            }
        }
        let broadcast = config["broadcast"]
        var join = ChangeHub.Join(
            topic: message.topic,
            joinRef: message.joinRef ?? message.ref,
            bindings: bindings,
            viewer: viewer,
            receivesOwnBroadcasts: broadcast?["self"]?.boolValue ?? false,
            acknowledgesBroadcasts: broadcast?["ack"]?.boolValue ?? false
        )
        let presence = config["presence"]
        if let key = presence?["key"]?.stringValue, !key.isEmpty {
            guard key.utf8.count <= Self.maxPresenceKey else {
                reply(message, .error("a presence key is at most \(Self.maxPresenceKey) bytes"), to: client)
                return
            }
            join.presenceKey = key
        }
        join.presenceEnabled = presence?["enabled"]?.boolValue ?? false
        let name = String(message.topic.dropFirst("realtime:".count))
        var greeting = [Self.replyText(message, .ok(["postgres_changes": .array(echoed)]), version: client.version)]
        if !bindings.isEmpty {
            greeting.append(
                frame(
                    on: join,
                    "system",
                    PhoenixMessage.json(
                        JSONValue.object([
                            "extension": "postgres_changes", "status": "ok", "message": "Subscribed to PostgreSQL", "channel": .string(name),
                        ])
                    ),
                    version: client.version
                )
            )
        }
        let after = config["after"]?.stringValue
        if hub.join(client, join, greeting: greeting, resumingAfter: after) == .unavailable {
            systemError(
                ["extension": "postgres_changes", "channel": .string(name)],
                "Changes after \(after ?? "") are no longer held; load the rows again",
                on: join,
                to: client
            )
        }
    }

    /// A binding checked against the data API's row rules: the table exists, its filter reads,
    /// and the viewer may see rows it names (someone else's order or likes is refused, not
    /// silently empty).
    private func decide(_ binding: JSONValue, id: Int, viewer: Viewer?) async -> Result<ChangeHub.Binding, Refusal> {
        let event = (binding["event"]?.stringValue ?? "*").uppercased()
        guard ["*", "INSERT", "UPDATE", "DELETE"].contains(event) else { return .failure("event must be INSERT, UPDATE, DELETE or *") }
        guard (binding["schema"]?.stringValue ?? "public") == "public" else { return .failure("only the public schema is available") }
        guard let table = binding["table"]?.stringValue, TableChange.columnTypes[table] != nil else {
            return .failure("changes are available for \(TableChange.columnTypes.keys.sorted().joined(separator: ", "))")
        }
        var filter: ChangeFilter?
        if let text = binding["filter"]?.stringValue, !text.isEmpty {
            let read: ChangeFilter
            do { read = try ChangeFilter(text) } catch { return .failure(Refusal(error.reason)) }
            guard TableChange.columnTypes[table]?[read.column] != nil else { return .failure("\(table) has no column \(read.column)") }
            filter = read
        }
        let admin = viewer?.role == UserRole.admin.rawValue
        switch table {
        case "orders", "likes", "posts", "collections":
            guard let viewer else { return .failure("sign in to follow \(table)") }
            if table == "likes", let pinned = filter.flatMap({ $0.column == "user_id" ? $0.pinnedValue : nil }), pinned != viewer.user {
                return .failure("likes are only their owner's")
            }
            if table == "orders", !admin, let filter, let pinned = filter.pinnedValue {
                switch filter.column {
                case "id":
                    guard await endpoints.gate.orders.mayFollow(order: pinned, user: viewer.user, role: viewer.role) else {
                        return .failure("order \(pinned) is only for its customer, driver, restaurant and admins")
                    }
                case "customer_id", "driver_id":
                    guard pinned == viewer.user else { return .failure("orders are only for their parties") }
                default: break
                }
            }
        default: break
        }
        return .success(ChangeHub.Binding(id: id, event: event, table: table, filter: filter))
    }

    private func refresh(_ message: PhoenixMessage, client: ChangeHub.Client, apikey: String) async {
        guard let join = hub.join(of: client, topic: message.topic) else { return }
        switch await viewer(message.payload["access_token"]?.stringValue, apikey: apikey) {
        case .success(let fresh?) where join.viewer == nil || join.viewer?.user == fresh.user:
            hub.update(client, topic: message.topic, viewer: fresh)
        case .success:
            // The anon key, or another user's token: the join keeps the viewer it has.
            break
        case .failure(let refusal):
            systemError(["extension": "system"], refusal.reason, on: join, to: client)
        }
    }

    /// The viewer a join's `access_token` names: nil for none or the anon key.
    private func viewer(_ token: String?, apikey: String) async -> Result<Viewer?, Refusal> {
        guard let token, !token.isEmpty, token != apikey, token != anonKey else { return .success(nil) }
        do throws(AccessTokenError) {
            return .success(try await endpoints.gate.viewer(token: token))
        } catch .expired {
            return .failure("Token has expired")
        } catch .keysUnavailable {
            return .failure("access tokens cannot be checked just now; retry")
        } catch {
            return .failure("Invalid token")
        }
    }

    // MARK: Frames

    private enum Reply {
        case ok([String: JSONValue])
        case error(String)

        var json: String {
            switch self {
            case .ok(let response): PhoenixMessage.json(JSONValue.object(["status": "ok", "response": .object(response)]))
            case .error(let reason): PhoenixMessage.json(JSONValue.object(["status": "error", "response": .object(["reason": .string(reason)])]))
            }
        }
    }

    private static func replyText(_ message: PhoenixMessage, _ reply: Reply, version: PhoenixMessage.Version) -> String {
        PhoenixMessage.text(version, joinRef: message.joinRef, ref: message.ref, topic: message.topic, event: "phx_reply", payloadJSON: reply.json)
    }

    private func reply(_ message: PhoenixMessage, _ reply: Reply, to client: ChangeHub.Client) {
        _ = client.send(Self.replyText(message, reply, version: client.version))
    }

    /// A `system` message with `status: error` and `message` (and `fields`) on `join`'s channel.
    private func systemError(_ fields: [String: JSONValue], _ message: String, on join: ChangeHub.Join, to client: ChangeHub.Client) {
        var payload = fields
        payload["status"] = .string("error")
        payload["message"] = .string(message)
        _ = client.send(frame(on: join, "system", PhoenixMessage.json(JSONValue.object(payload)), version: client.version))
    }

    private func frame(on join: ChangeHub.Join, _ event: String, _ payloadJSON: String, version: PhoenixMessage.Version) -> String {
        PhoenixMessage.text(version, joinRef: join.joinRef, ref: nil, topic: join.topic, event: event, payloadJSON: payloadJSON)
    }

    /// A binding's server id: unique per connection, stable for a rejoin of the same channel.
    private static func bindingID(client: ChangeHub.Client, topic: String, index: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(client.id)
        hasher.combine(topic)
        hasher.combine(index)
        return abs(hasher.finalize() % 100_000_000)
    }
}

/// Why a join, a binding or a token was refused: the reason the client is told.
struct Refusal: Error, ExpressibleByStringInterpolation {
    let reason: String

    init(_ reason: String) { self.reason = reason }
    init(stringLiteral value: String) { reason = value }
    init(stringInterpolation: DefaultStringInterpolation) { reason = String(stringInterpolation: stringInterpolation) }
}
