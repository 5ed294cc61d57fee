import Foundation
import Metrics
import NIOCore
import RealtimeWire
import Synchronization

/// The gateway's realtime switchboard: which client follows which channel, the fan-out of each
/// event to its subscribers' queues, and the replay window SSE clients resume from.
///
/// Publishing never waits for a client: it offers the event's frame to each subscriber's
/// `ClientQueue`, once per client however many of its channels carry the event.
final class RealtimeHub: Sendable {
    /// One connected client.
    final class Client: Sendable {
        let id: UInt64
        let transport: RealtimeMetrics.Transport
        let queue: ClientQueue
        /// Its connection: closed under a writer that stays stuck after the queue overflowed.
        let connection: any Channel

        init(id: UInt64, transport: RealtimeMetrics.Transport, queue: ClientQueue, connection: any Channel) {
            self.id = id
            self.transport = transport
            self.queue = queue
            self.connection = connection
        }
    }

    /// How long a client whose queue overflowed has to take its last frames and the close before
    /// its connection is closed under it.
    static let overflowGrace: Duration = .seconds(2)

    /// How a resuming SSE client's replay went.
    enum Resumption: Equatable {
        /// Its last event is in the window: the events after it that it may see.
        case replayed(count: Int)
        /// Its last event has left the window (or this replica never saw it).
        case unavailable
    }

    private struct State {
        var subscribers: [RealtimeChannel: [UInt64: Client]] = [:]
        var channelsOf: [UInt64: Set<RealtimeChannel>] = [:]
        var live: Set<UInt64> = []
        var nextClientID: UInt64 = 1
        var replay: ReplayWindow<PushEvent>
        /// Whether the `admin` channel is followed, readable without the lock.
        let admin: AdminPresence

        mutating func add(_ client: Client, to channel: RealtimeChannel) {
            channelsOf[client.id, default: []].insert(channel)
            subscribers[channel, default: [:]][client.id] = client
            if channel == .admin { admin.followers(subscribers[channel]?.count ?? 0) }
        }

        mutating func remove(_ client: Client, from channel: RealtimeChannel) {
            subscribers[channel]?[client.id] = nil
            if subscribers[channel]?.isEmpty == true { subscribers[channel] = nil }
            if channel == .admin { admin.followers(subscribers[channel]?.count ?? 0) }
        }
    }

    private let state: Mutex<State>
    let metrics: RealtimeMetrics

    private let replayAge: Duration
    private let admin: AdminPresence

    init(replayCapacity: Int, replayAge: Duration, metrics: RealtimeMetrics = RealtimeMetrics()) {
        let admin = AdminPresence()
        state = Mutex(State(replay: ReplayWindow(capacity: replayCapacity, age: replayAge), admin: admin))
        self.admin = admin
        self.replayAge = replayAge
        self.metrics = metrics
    }

    // MARK: Clients

    func connect(transport: RealtimeMetrics.Transport, queueCapacity: Int, connection: any Channel) -> Client {
        let id = state.withLock { state in
            defer { state.nextClientID += 1 }
            state.live.insert(state.nextClientID)
            return state.nextClientID
        }
        metrics.connected(transport)
        return Client(id: id, transport: transport, queue: ClientQueue(capacity: queueCapacity), connection: connection)
    }

    /// Forgets `client` and ends its queue.
    func disconnect(_ client: Client, reason: String) {
        let wasLive = state.withLock { state in
            for channel in state.channelsOf.removeValue(forKey: client.id) ?? [] {
                state.remove(client, from: channel)
            }
            return state.live.remove(client.id) != nil
        }
        client.queue.close()
        if wasLive { metrics.disconnected(client.transport, reason: reason) }
    }

    /// Clients connected now, over both transports.
    var openConnections: Int { state.withLock { $0.live.count } }

    /// Subscribes `client` to `channel` (already authorised).
    func subscribe(_ client: Client, to channel: RealtimeChannel) {
        state.withLock { $0.add(client, to: channel) }
    }

    func unsubscribe(_ client: Client, from channel: RealtimeChannel) {
        state.withLock { state in
            state.channelsOf[client.id]?.remove(channel)
            state.remove(client, from: channel)
        }
    }

    /// Subscribes `client` to `channels` and, atomically with it (no event can slip between the
    /// replay and the live stream), queues the events of the replay window after `lastEventID`
    /// that those channels carry.
    func subscribe(_ client: Client, to channels: Set<RealtimeChannel>, resumingAfter lastEventID: String?) -> Resumption? {
        state.withLock { state in
            for channel in channels { state.add(client, to: channel) }
            guard let lastEventID else { return nil }
            guard let missed = state.replay.elements(after: { $0.id == lastEventID }) else { return .unavailable }
            var count = 0
            for (event, _) in missed {
                guard let channel = event.channels.first(where: channels.contains) else { continue }
                _ = client.queue.offer(event.frame(event.text(for: channel), enqueuedAt: .now))
                count += 1
            }
            return .replayed(count: count)
        }
    }

    // MARK: Events

    /// Whether any client follows the `admin` channel, or did within the replay window's age (the
    /// feed renders an event's `admin` frame only then: a console that reconnects with
    /// `Last-Event-ID` finds what it missed). Asked for every event, so it takes no lock.
    func adminFollowed() -> Bool {
        admin.isFollowed(within: replayAge)
    }

    /// Offers `event` to every client subscribed to one of its channels and keeps it for replay.
    func publish(_ event: PushEvent) {
        let overflowed: [any Channel] = state.withLock { state in
            state.replay.append(event, receivedAt: event.receivedAt)
            var reached = Set<UInt64>()
            var overflowed: [any Channel] = []
            for channel in event.channels {
                // Rendered once per channel, and only for a channel someone follows.
                guard let subscribers = state.subscribers[channel] else { continue }
                let frame = event.frame(event.text(for: channel), enqueuedAt: event.receivedAt)
                for (id, client) in subscribers where reached.insert(id).inserted {
                    let offer = client.queue.offer(frame)
                    metrics.offered(offer)
                    if offer == .overflowed { overflowed.append(client.connection) }
                }
            }
            return overflowed
        }
        Self.closeLater(overflowed)
    }

    /// Closes the connections of clients whose queue overflowed once they have had
    /// `overflowGrace` to take the close: their writer may be stuck on a socket the client no
    /// longer reads.
    static func closeLater(_ connections: [any Channel]) {
        for connection in connections {
            Task {
                try? await Task.sleep(for: overflowGrace)
                try? await connection.close()
            }
        }
    }
}

/// How many clients follow the `admin` channel and when the last one left, kept by the hub under
/// its lock and read without it.
final class AdminPresence: Sendable {
    private let origin = ContinuousClock.now
    private let count = Atomic<Int>(0)
    /// Nanoseconds from `origin` to when the last follower left; `Int64.min` before any did.
    private let leftAt = Atomic<Int64>(.min)

    /// Records how many follow now (called under the hub's lock).
    func followers(_ followers: Int) {
        let before = count.exchange(followers, ordering: .relaxed)
        if followers == 0, before > 0 {
            let since = ContinuousClock.now - origin
            leftAt.store(since.components.seconds * 1_000_000_000 + since.components.attoseconds / 1_000_000_000, ordering: .releasing)
        }
    }

    func isFollowed(within window: Duration) -> Bool {
        if count.load(ordering: .relaxed) > 0 { return true }
        let left = leftAt.load(ordering: .acquiring)
        guard left != .min else { return false }
        return ContinuousClock.now - origin - .nanoseconds(left) < window
    }
}
