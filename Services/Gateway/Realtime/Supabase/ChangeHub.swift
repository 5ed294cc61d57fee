import Foundation
import Identity
import NIOCore
import RealtimeWire
import ServiceKit
import Synchronization

/// Supabase Realtime's side of the gateway's switchboard: the channels each client joined, their
/// `postgres_changes` bindings, and the fan-out of each table change to the joins whose bindings
/// match it and whose viewer may see the row. Like `RealtimeHub`, it never waits for a client:
/// it offers frames to their `ClientQueue`s, under its lock, so that a join's reply, its replay
/// and the live changes after it reach the client in that order.
final class ChangeHub: Sendable {
    /// One `postgres_changes` binding of a join, with the id the join reply gave it.
    struct Binding: Sendable {
        let id: Int
        /// `INSERT`, `UPDATE`, `DELETE` or `*`.
        let event: String
        let table: String
        let filter: ChangeFilter?

        func matches(_ change: TableChange) -> Bool {
            table == change.table && (event == "*" || event == change.kind.rawValue) && (filter?.matches(change.filterable) ?? true)
        }

        enum RoutingKey: Hashable {
            case table(String)
            case pinned(String)
        }

        /// Where the hub files this binding: under the value an `eq` filter pins, else its table.
        var routingKey: RoutingKey {
            guard let filter, let value = filter.pinnedValue else { return .table(table) }
            return .pinned(Self.pin(table, filter.column, value))
        }

        static func pin(_ table: String, _ column: String, _ value: String) -> String { "\(table)|\(column)|\(value)" }
    }

    /// One joined channel (`realtime:<name>`) of a client.
    struct Join: Sendable {
        let topic: String
        let joinRef: String?
        let bindings: [Binding]
        /// nil: the anonymous caller (the anon key, or no token).
        var viewer: Viewer?
        /// `config.broadcast.self`: the sender's own broadcasts come back to it.
        let receivesOwnBroadcasts: Bool
        /// `config.broadcast.ack`: each broadcast sent is answered with a reply.
        let acknowledgesBroadcasts: Bool
        /// `config.presence.key`, or one made for the join: the key its tracks are filed under.
        var presenceKey: String = UUID().lowercased
        /// `config.presence.enabled`, or turned on by a track: the join is told who is present.
        var presenceEnabled: Bool = false
    }

    final class Client: Sendable {
        let id: UInt64
        let version: PhoenixMessage.Version
        let queue: ClientQueue
        /// Its connection: closed under a writer that stays stuck after the queue overflowed.
        let connection: any Channel

        init(id: UInt64, version: PhoenixMessage.Version, queue: ClientQueue, connection: any Channel) {
            self.id = id
            self.version = version
            self.queue = queue
            self.connection = connection
        }

        func send(_ text: String, eventID: String? = nil, enqueuedAt: ContinuousClock.Instant = .now) -> ClientQueue.Offer {
            send(.text(text), eventID: eventID, enqueuedAt: enqueuedAt)
        }

        func send(_ content: ClientQueue.Frame.Content, eventID: String? = nil, enqueuedAt: ContinuousClock.Instant = .now) -> ClientQueue.Offer {
            queue.offer(.init(eventID: eventID, content: content, supersedingKey: nil, enqueuedAt: enqueuedAt))
        }
    }

    /// How a rejoin that named its last change went.
    enum Replay: Equatable {
        case replayed(count: Int)
        /// The change has left the window (or this replica never saw it): load the rows again.
        case unavailable
    }

    private struct State {
        var clients: [UInt64: Client] = [:]
        var joins: [UInt64: [String: Join]] = [:]
        /// Clients with a binding on each table that no `eq` filter pins: every change of the
        /// table is matched against them.
        var byTable: [String: Set<UInt64>] = [:]
        /// Clients with a binding pinned by `column=eq.value`, by `table|column|value`: a change is
        /// matched only against those its own values name (2,000 clients each following one
        /// order cost one lookup per change, not 2,000 filter checks).
        var byPinned: [String: Set<UInt64>] = [:]
        /// Clients joined on each topic, for broadcasts.
        var byTopic: [String: Set<UInt64>] = [:]
        var nextID: UInt64 = 1
        var window: ReplayWindow<TableChange>
        var presence = PresenceTable()
        /// Each client's presence allowance: a bucket of `PresenceLimits.messagesPerSecond`
        /// messages, refilled at that rate (a burst of one more is refused however it falls
        /// across seconds).
        var presenceMessages: [UInt64: (tokens: Double, at: ContinuousClock.Instant)] = [:]

        /// Removes `client`'s join of `topic`, and what it tracked there (appended to `untracked`).
        mutating func remove(_ client: UInt64, topic: String, untracked: inout [PresenceTable.Entry]) {
            if let ref = presence.ref(of: client, on: topic), let entry = presence.entry(topic: topic, ref: ref) {
                sendPresenceDiff(presence.untrack(topic: topic, ref: ref), on: topic)
                untracked.append(entry)
            }
            guard let join = joins[client]?.removeValue(forKey: topic) else { return }
            byTopic[topic]?.remove(client)
            if byTopic[topic]?.isEmpty == true { byTopic[topic] = nil }
            let stillBound = Set(joins[client]?.values.flatMap { $0.bindings.map(\.routingKey) } ?? [])
            for key in Set(join.bindings.map(\.routingKey)) where !stillBound.contains(key) {
                switch key {
                case .table(let table):
                    byTable[table]?.remove(client)
                    if byTable[table]?.isEmpty == true { byTable[table] = nil }
                case .pinned(let pin):
                    byPinned[pin]?.remove(client)
                    if byPinned[pin]?.isEmpty == true { byPinned[pin] = nil }
                }
            }
        }

        /// Queues `diff` as `presence_diff` to every join of `topic` that is told of presence.
        func sendPresenceDiff(_ diff: PresenceTable.Diff, on topic: String) {
            guard !diff.isEmpty else { return }
            let payload = PhoenixMessage.json(diff.payload)
            for id in byTopic[topic] ?? [] {
                guard let client = clients[id], let join = joins[id]?[topic], join.presenceEnabled else { continue }
                _ = client.send(
                    PhoenixMessage.text(client.version, joinRef: join.joinRef, ref: nil, topic: topic, event: "presence_diff", payloadJSON: payload)
                )
            }
        }

        mutating func add(_ client: UInt64, _ join: Join) {
            joins[client, default: [:]][join.topic] = join
            byTopic[join.topic, default: []].insert(client)
            for key in Set(join.bindings.map(\.routingKey)) {
                switch key {
                case .table(let table): byTable[table, default: []].insert(client)
                case .pinned(let pin): byPinned[pin, default: []].insert(client)
                }
            }
        }

        /// The clients a change may concern: those with an unpinned binding on its table, and
        /// those pinned to one of its values.
        func candidates(for change: TableChange) -> Set<UInt64> {
            var found = byTable[change.table] ?? []
            guard !byPinned.isEmpty else { return found }
            for (column, value) in change.filterable {
                guard let text = ChangeFilter.text(value), let pinned = byPinned[Binding.pin(change.table, column, ChangeFilter.normalised(text))]
                else { continue }
                found.formUnion(pinned)
            }
            return found
        }
    }

    private let state: Mutex<State>
    let metrics: RealtimeMetrics
    /// Told of the entries this replica's clients stopped tracking by leaving or going (their
    /// untracks, for the other replicas).
    private let presenceGone = Mutex<(@Sendable ([PresenceTable.Entry]) -> Void)?>(nil)

    init(windowCapacity: Int, windowAge: Duration, metrics: RealtimeMetrics) {
        state = Mutex(State(window: ReplayWindow(capacity: windowCapacity, age: windowAge)))
        self.metrics = metrics
    }

    // MARK: Clients

    func connect(version: PhoenixMessage.Version, queueCapacity: Int, connection: any Channel) -> Client {
        let client = state.withLock { state in
            defer { state.nextID += 1 }
            let client = Client(id: state.nextID, version: version, queue: ClientQueue(capacity: queueCapacity), connection: connection)
            state.clients[client.id] = client
            return client
        }
        metrics.connected(.supabase)
        return client
    }

    func disconnect(_ client: Client, reason: String) {
        var untracked: [PresenceTable.Entry] = []
        let known = state.withLock { state in
            for topic in state.joins[client.id]?.keys.map({ $0 }) ?? [] { state.remove(client.id, topic: topic, untracked: &untracked) }
            state.joins[client.id] = nil
            state.presenceMessages[client.id] = nil
            return state.clients.removeValue(forKey: client.id) != nil
        }
        client.queue.close()
        if known { metrics.disconnected(.supabase, reason: reason) }
        tellGone(untracked)
    }

    var openConnections: Int { state.withLock { $0.clients.count } }

    /// Makes `join` live and, in this order, queues `greeting` (the join reply and the
    /// subscription's system message), the changes of the window after `lastEventID` that it
    /// matches, then every change published after it.
    @discardableResult
    func join(_ client: Client, _ join: Join, greeting: [String], resumingAfter lastEventID: String?) -> Replay? {
        var untracked: [PresenceTable.Entry] = []
        defer { tellGone(untracked) }
        return state.withLock { state in
            state.remove(client.id, topic: join.topic, untracked: &untracked)
            state.add(client.id, join)
            for text in greeting { _ = client.send(text) }
            if join.presenceEnabled { Self.sendPresenceState(state.presence, to: client, on: join) }
            guard let lastEventID else { return nil }
            guard let missed = state.window.elements(after: { $0.eventID == lastEventID }) else { return .unavailable }
            var count = 0
            for (change, _) in missed {
                if let text = Self.frame(change, dataJSON: change.dataJSON, for: join, version: client.version) {
                    _ = client.send(text, eventID: change.eventID)
                    count += 1
                }
            }
            return .replayed(count: count)
        }
    }

    /// Ends `client`'s join of `topic`, queueing `farewell` (the leave's reply, `phx_close`) after
    /// whatever was queued for it before.
    func leave(_ client: Client, topic: String, farewell: [String]) {
        var untracked: [PresenceTable.Entry] = []
        state.withLock { state in
            state.remove(client.id, topic: topic, untracked: &untracked)
            for text in farewell { _ = client.send(text) }
        }
        tellGone(untracked)
    }

    func join(of client: Client, topic: String) -> Join? {
        state.withLock { $0.joins[client.id]?[topic] }
    }

    /// A fresh token's viewer for `client`'s join of `topic`.
    func update(_ client: Client, topic: String, viewer: Viewer) {
        state.withLock { $0.joins[client.id]?[topic]?.viewer = viewer }
    }

    // MARK: Tokens

    /// Ends every join whose token has expired, or whose account has been deleted since, each with
    /// a system message saying so, then `phx_close`. Run once a second for all connections (a
    /// watch of its own per connection armed 10,000 timers a second at 10,000 sockets). The walk
    /// over every join under the hub's lock compares dates and, after a deletion, strings.
    func endLapsedJoins(now: Date = Date(), deletedUsers: DeletedUsers) {
        let deletedIDs = deletedUsers.recent(now: now)
        var untracked: [PresenceTable.Entry] = []
        state.withLock { state in
            var lapsed: [(client: UInt64, join: Join, message: String)] = []
            for (client, joins) in state.joins {
                for join in joins.values {
                    guard let viewer = join.viewer else { continue }
                    let deleted = !deletedIDs.isEmpty && deletedIDs.contains(viewer.user.lowercased())
                    guard deleted || viewer.expiresAt <= now else { continue }
                    let seconds = Int(now.timeIntervalSince(viewer.expiresAt))
                    lapsed.append((client, join, deleted ? "The account has been deleted" : "Token has expired \(seconds) seconds ago"))
                }
            }
            for (id, join, message) in lapsed {
                guard let client = state.clients[id] else { continue }
                state.remove(id, topic: join.topic, untracked: &untracked)
                let error = #"{"extension":"system","message":"\#(message)","status":"error"}"#
                for (event, payload) in [("system", error), ("phx_close", "{}")] {
                    _ = client.send(
                        PhoenixMessage.text(client.version, joinRef: join.joinRef, ref: nil, topic: join.topic, event: event, payloadJSON: payload)
                    )
                }
            }
        }
        tellGone(untracked)
    }

    // MARK: Changes

    /// Offers `change` to every join whose bindings match it and whose viewer may see the row,
    /// and keeps it in the window rejoining clients resume from.
    func publish(_ change: TableChange, receivedAt: ContinuousClock.Instant = .now) {
        let overflowed: [any Channel] = state.withLock { state in
            state.window.append(change, receivedAt: receivedAt)
            // Rendered once, and only when someone may want it.
            let candidates = state.candidates(for: change)
            guard !candidates.isEmpty else { return [] }
            let dataJSON = change.dataJSON
            var overflowed: [any Channel] = []
            for id in candidates {
                guard let client = state.clients[id] else { continue }
                for join in (state.joins[id] ?? [:]).values {
                    guard let text = Self.frame(change, dataJSON: dataJSON, for: join, version: client.version) else { continue }
                    let offer = client.send(text, eventID: change.eventID, enqueuedAt: receivedAt)
                    metrics.offered(offer)
                    if offer == .overflowed { overflowed.append(client.connection) }
                }
            }
            return overflowed
        }
        RealtimeHub.closeLater(overflowed)
    }

    /// The `postgres_changes` message of `change` for `join`, naming the ids of the bindings it
    /// matches; nil when none does or the viewer may not see the row.
    private static func frame(_ change: TableChange, dataJSON: String, for join: Join, version: PhoenixMessage.Version) -> String? {
        let ids = join.bindings.filter { $0.matches(change) }.map(\.id)
        guard !ids.isEmpty, change.isVisible(to: join.viewer) else { return nil }
        return PhoenixMessage.text(
            version,
            joinRef: join.joinRef,
            ref: nil,
            topic: join.topic,
            event: "postgres_changes",
            payloadJSON: #"{"data":\#(dataJSON),"ids":\#(PhoenixMessage.json(ids))}"#
        )
    }

    // MARK: Broadcast

    /// Sends `broadcast` to every client joined on `topic` on this replica, in the form its
    /// version reads (`Broadcast.frame`); the sender (when it is here) only if its join asked for
    /// its own.
    func broadcast(topic: String, _ broadcast: Broadcast, from sender: UInt64?) {
        let overflowed: [any Channel] = state.withLock { state in
            var overflowed: [any Channel] = []
            for id in state.byTopic[topic] ?? [] {
                guard let client = state.clients[id], let join = state.joins[id]?[topic] else { continue }
                if id == sender, !join.receivesOwnBroadcasts { continue }
                guard let frame = broadcast.frame(for: client.version, topic: topic, joinRef: join.joinRef) else { continue }
                if client.send(frame) == .overflowed { overflowed.append(client.connection) }
            }
            return overflowed
        }
        RealtimeHub.closeLater(overflowed)
    }
}

// MARK: Presence

extension ChangeHub {
    /// Why a track or an untrack was refused: the reply's reason.
    enum PresenceRefusal: Error, Equatable {
        case notJoined
        /// The socket tracks `PresenceLimits.keysPerSocket` entries already.
        case tooManyKeys
        /// More than `PresenceLimits.messagesPerSecond` presence messages this second.
        case tooFast

        var reason: String {
            switch self {
            case .notJoined: "join the channel first"
            case .tooManyKeys: "a socket tracks at most \(PresenceLimits.keysPerSocket) presences"
            case .tooFast: "at most \(PresenceLimits.messagesPerSecond) presence messages a second"
            }
        }
    }

    enum PresenceLimits {
        static let keysPerSocket = 100
        static let messagesPerSecond = 10
    }

    /// Who hears of the entries this replica's clients stop tracking when they leave or go.
    func onPresenceGone(_ handler: @escaping @Sendable ([PresenceTable.Entry]) -> Void) {
        presenceGone.withLock { $0 = handler }
    }

    private func tellGone(_ entries: [PresenceTable.Entry]) {
        guard !entries.isEmpty, let handler = presenceGone.withLock({ $0 }) else { return }
        handler(entries)
    }

    /// `client` tracks `state` on its join of `topic` (made from `origin`, this replica): the
    /// join is told of presence from now on (`presence_state` first, when it was not), and every
    /// join of the topic told of presence gets the diff.
    /// - Returns: the entry, and the ref of the meta it replaced, for the other replicas.
    func track(
        _ client: Client,
        topic: String,
        state tracked: [String: JSONValue],
        origin: String,
        now: ContinuousClock.Instant = .now
    ) -> Result<(entry: PresenceTable.Entry, replaced: String?), PresenceRefusal> {
        state.withLock { state in
            guard var join = state.joins[client.id]?[topic] else { return .failure(.notJoined) }
            if let refusal = Self.countMessage(of: client.id, in: &state, now: now) { return .failure(refusal) }
            if state.presence.ref(of: client.id, on: topic) == nil, state.presence.tracked(by: client.id) >= PresenceLimits.keysPerSocket {
                return .failure(.tooManyKeys)
            }
            if !join.presenceEnabled {
                join.presenceEnabled = true
                state.joins[client.id]?[topic] = join
                Self.sendPresenceState(state.presence, to: client, on: join)
            }
            let entry = PresenceTable.Entry(
                topic: topic,
                key: join.presenceKey,
                ref: Self.makeRef(),
                state: tracked,
                origin: origin,
                client: client.id,
                refreshedAt: now
            )
            let (diff, replaced) = state.presence.track(entry)
            state.sendPresenceDiff(diff, on: topic)
            return .success((entry, replaced))
        }
    }

    /// `client` stops tracking on `topic`.
    /// - Returns: the entry it had, for the other replicas; nil when it tracked nothing there.
    func untrack(_ client: Client, topic: String, now: ContinuousClock.Instant = .now) -> Result<PresenceTable.Entry?, PresenceRefusal> {
        state.withLock { state in
            guard state.joins[client.id]?[topic] != nil else { return .failure(.notJoined) }
            if let refusal = Self.countMessage(of: client.id, in: &state, now: now) { return .failure(refusal) }
            guard let ref = state.presence.ref(of: client.id, on: topic), let entry = state.presence.entry(topic: topic, ref: ref) else {
                return .success(nil)
            }
            state.sendPresenceDiff(state.presence.untrack(topic: topic, ref: ref), on: topic)
            return .success(entry)
        }
    }

    /// Another replica's track (an update names the meta it replaces).
    func applyRemoteTrack(_ entry: PresenceTable.Entry, replacing replaced: String?) {
        state.withLock { state in
            state.sendPresenceDiff(state.presence.track(entry, replacing: replaced).diff, on: entry.topic)
        }
    }

    /// Another replica's untrack.
    func applyRemoteUntrack(topic: String, ref: String) {
        state.withLock { state in
            state.sendPresenceDiff(state.presence.untrack(topic: topic, ref: ref), on: topic)
        }
    }

    /// Drops the other replicas' entries not refreshed since `cutoff`, telling the joins.
    func expirePresence(before cutoff: ContinuousClock.Instant) {
        state.withLock { state in
            for (topic, diff) in state.presence.expire(before: cutoff) { state.sendPresenceDiff(diff, on: topic) }
        }
    }

    /// Who is present on `topic`, as `presence_state` says it (every replica's clients).
    func presenceState(of topic: String) -> JSONValue {
        state.withLock { $0.presence.state(of: topic) }
    }

    /// This replica's clients' entries, for its heartbeat.
    func localPresence() -> [PresenceTable.Entry] {
        state.withLock { $0.presence.local() }
    }

    private static func sendPresenceState(_ presence: PresenceTable, to client: Client, on join: Join) {
        let payload = PhoenixMessage.json(presence.state(of: join.topic))
        _ = client.send(
            PhoenixMessage.text(client.version, joinRef: join.joinRef, ref: nil, topic: join.topic, event: "presence_state", payloadJSON: payload)
        )
    }

    /// Takes one presence message of `client` from its allowance; the refusal when none is left.
    private static func countMessage(of client: UInt64, in state: inout State, now: ContinuousClock.Instant) -> PresenceRefusal? {
        let rate = Double(PresenceLimits.messagesPerSecond)
        var bucket = state.presenceMessages[client] ?? (rate, now)
        let elapsed = bucket.at.duration(to: now)
        bucket = (min(rate, bucket.tokens + rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)), now)
        guard bucket.tokens >= 1 else {
            state.presenceMessages[client] = bucket
            return .tooFast
        }
        bucket.tokens -= 1
        state.presenceMessages[client] = bucket
        return nil
    }

    /// A new meta's `phx_ref`: unique across replicas.
    private static func makeRef() -> String {
        String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20))
    }
}
