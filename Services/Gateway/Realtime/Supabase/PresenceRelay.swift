import Contracts
import Foundation
import Identity
import Kafka
import Logging

/// Supabase Realtime presence across the gateway's replicas, over `gateway.presence` (the gateway
/// owns no database). A replica publishes its clients' tracks and untracks as they happen and,
/// every `heartbeat`, everything they track; it applies the others' records to its hub, and drops
/// another replica's entries not heard of for `expiry` — so a replica that dies leaves no ghosts,
/// and one that starts learns who is present within a heartbeat.
struct PresenceRelay: Sendable {
    let producer: KafkaProducer
    let hub: ChangeHub
    let replica: String
    let logger: Logger
    var heartbeat: Duration = .seconds(10)
    var expiry: Duration = .seconds(30)

    /// What travels on the topic.
    struct Record: Codable, Equatable {
        enum Operation: String, Codable {
            case track, untrack, heartbeat
        }

        struct Entry: Codable, Equatable {
            var topic: String
            var key: String
            var ref: String
            var state: [String: JSONValue]?
        }

        /// The replica whose clients these are.
        var origin: String
        var op: Operation
        /// One entry for a track or an untrack; all of a replica's (a slice) for a heartbeat.
        var entries: [Entry]
        /// A track that updates a meta: the ref it replaces.
        var replaces: String?
    }

    /// A heartbeat's entries are sent in records of at most this many (well under a record's
    /// megabyte for states of a few hundred bytes).
    static let entriesPerRecord = 500

    /// Publishes `entry`, just tracked here (replacing the meta `replaced`).
    func tracked(_ entry: PresenceTable.Entry, replacing replaced: String?) async {
        await publish(Record(origin: replica, op: .track, entries: [Self.wire(entry)], replaces: replaced), key: entry.topic)
    }

    /// Publishes the untracks of `entries`, no longer tracked here.
    func untracked(_ entries: [PresenceTable.Entry]) async {
        for entry in entries {
            await publish(Record(origin: replica, op: .untrack, entries: [Self.wire(entry, withState: false)]), key: entry.topic)
        }
    }

    /// Tells the other replicas of the entries this replica's clients stop tracking by leaving
    /// or going: call once, when the gateway starts.
    func relayLeaves() {
        hub.onPresenceGone { [self] entries in
            Task { await untracked(entries) }
        }
    }

    /// One heartbeat (every `heartbeat`, by a `RepeatingTask`): the others' silent entries
    /// dropped, this replica's sent again.
    func beat(now: ContinuousClock.Instant = .now) async {
        hub.expirePresence(before: now - expiry)
        let local = hub.localPresence().map { Self.wire($0) }
        for start in stride(from: 0, to: local.count, by: Self.entriesPerRecord) {
            let slice = Array(local[start..<min(start + Self.entriesPerRecord, local.count)])
            await publish(Record(origin: replica, op: .heartbeat, entries: slice), key: replica)
        }
    }

    /// A record read from `gateway.presence`: applied here unless this replica wrote it.
    func received(_ message: KafkaMessage) {
        guard let record = try? JSONDecoder().decode(Record.self, from: Data(message.value)) else {
            logger.warning(
                "Not applying an unreadable presence record",
                metadata: ["kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)"]
            )
            return
        }
        guard record.origin != replica else { return }
        let now = ContinuousClock.now
        for entry in record.entries where entry.topic.hasPrefix("realtime:") {
            switch record.op {
            case .untrack:
                hub.applyRemoteUntrack(topic: entry.topic, ref: entry.ref)
            case .track, .heartbeat:
                let applied = PresenceTable.Entry(
                    topic: entry.topic,
                    key: entry.key,
                    ref: entry.ref,
                    state: entry.state ?? [:],
                    origin: record.origin,
                    client: nil,
                    refreshedAt: now
                )
                hub.applyRemoteTrack(applied, replacing: record.op == .track ? record.replaces : nil)
            }
        }
    }

    private func publish(_ record: Record, key: String) async {
        do {
            let value = try JSONEncoder().encode(record)
            _ = try await producer.send(KafkaRecord(topic: TopicCatalog.gatewayPresence.name, key: key, value: Array(value)))
        } catch {
            // The others learn of it at the next heartbeat, or drop it when the heartbeats stop.
            logger.warning("A presence record could not be published", metadata: ["op": "\(record.op.rawValue)", "error": "\(error)"])
        }
    }

    private static func wire(_ entry: PresenceTable.Entry, withState: Bool = true) -> Record.Entry {
        Record.Entry(topic: entry.topic, key: entry.key, ref: entry.ref, state: withState ? entry.state : nil)
    }
}
