import Foundation
import Identity

/// Who is present on each channel, as Phoenix Presence keeps it: per topic, per key (a user, a
/// device: whatever `config.presence.key` names), one meta per tracking join, each with its
/// `phx_ref`. Entries come from this replica's clients (`client` set) and from the other replicas
/// (`origin`), which refresh theirs with heartbeats; one not refreshed in time is dropped, so a
/// replica that dies leaves no ghosts. Pure: the hub applies it under its lock and sends the diffs
/// it answers.
struct PresenceTable: Sendable {
    struct Entry: Sendable, Equatable {
        var topic: String
        var key: String
        var ref: String
        /// What the client tracked: a JSON object.
        var state: [String: JSONValue]
        /// The replica whose client tracked it.
        var origin: String
        /// The tracking client, when it is on this replica.
        var client: UInt64?
        var refreshedAt: ContinuousClock.Instant

        /// The meta Phoenix sends for it: the state, with `phx_ref` (and `phx_ref_prev`, for an
        /// update of an earlier meta).
        func meta(previous: String? = nil) -> JSONValue {
            var fields = state
            fields["phx_ref"] = .string(ref)
            if let previous { fields["phx_ref_prev"] = .string(previous) }
            return .object(fields)
        }
    }

    /// A `presence_diff` of one topic: metas joined and left, by key.
    struct Diff: Sendable, Equatable {
        var joins: [String: [JSONValue]] = [:]
        var leaves: [String: [JSONValue]] = [:]

        var isEmpty: Bool { joins.isEmpty && leaves.isEmpty }

        /// The payload: `{"joins":{key:{"metas":[…]}},"leaves":{…}}`.
        var payload: JSONValue {
            .object(["joins": Self.metas(joins), "leaves": Self.metas(leaves)])
        }

        static func metas(_ byKey: [String: [JSONValue]]) -> JSONValue {
            .object(byKey.mapValues { .object(["metas": .array($0)]) })
        }
    }

    /// Entries by topic, then by ref.
    private var topics: [String: [String: Entry]] = [:]
    /// Each local client's entries, by topic: its ref there.
    private var byClient: [UInt64: [String: String]] = [:]

    /// The `presence_state` payload of `topic`.
    func state(of topic: String) -> JSONValue {
        var byKey: [String: [JSONValue]] = [:]
        for entry in (topics[topic] ?? [:]).values.sorted(by: { $0.ref < $1.ref }) { byKey[entry.key, default: []].append(entry.meta()) }
        return Diff.metas(byKey)
    }

    /// How many entries `client` has tracked, over every topic.
    func tracked(by client: UInt64) -> Int { byClient[client]?.count ?? 0 }

    /// The entries of this replica's clients, for its heartbeats.
    func local() -> [Entry] {
        topics.values.flatMap { $0.values.filter { $0.client != nil } }
    }

    /// Tracks `entry`: a client's first track on its topic joins its key, a later one replaces
    /// its meta (a leave of the old and a join of the new, which names the old as `phx_ref_prev`).
    /// Another replica's update names the meta it replaces (`replacing`).
    /// - Returns: the diff, and the ref of the meta replaced.
    mutating func track(_ entry: Entry, replacing given: String? = nil) -> (diff: Diff, replaced: String?) {
        var diff = Diff()
        var replaced: String?
        if let earlier = given ?? entry.client.flatMap({ byClient[$0]?[entry.topic] }), earlier != entry.ref,
            let old = topics[entry.topic]?.removeValue(forKey: earlier)
        {
            replaced = old.ref
            diff.leaves[old.key, default: []].append(old.meta())
        }
        if let client = entry.client { byClient[client, default: [:]][entry.topic] = entry.ref }
        if let known = topics[entry.topic]?[entry.ref], known.state == entry.state, known.key == entry.key {
            // A heartbeat's mention of what is known: fresher, and nothing to tell.
            topics[entry.topic]?[entry.ref]?.refreshedAt = entry.refreshedAt
            return (diff, replaced)
        }
        topics[entry.topic, default: [:]][entry.ref] = entry
        diff.joins[entry.key, default: []].append(entry.meta(previous: replaced))
        return (diff, replaced)
    }

    /// Removes the entry `ref` of `topic`, if it is there.
    mutating func untrack(topic: String, ref: String) -> Diff {
        guard let entry = topics[topic]?.removeValue(forKey: ref) else { return Diff() }
        if topics[topic]?.isEmpty == true { topics[topic] = nil }
        if let client = entry.client, byClient[client]?[topic] == ref {
            byClient[client]?[topic] = nil
            if byClient[client]?.isEmpty == true { byClient[client] = nil }
        }
        var diff = Diff()
        diff.leaves[entry.key] = [entry.meta()]
        return diff
    }

    /// The entry `ref` of `topic`.
    func entry(topic: String, ref: String) -> Entry? { topics[topic]?[ref] }

    /// The ref `client` tracks on `topic`.
    func ref(of client: UInt64, on topic: String) -> String? { byClient[client]?[topic] }

    /// Every topic `client` tracks on, with its ref there.
    func refs(of client: UInt64) -> [String: String] { byClient[client] ?? [:] }

    /// Drops the other replicas' entries not refreshed since `cutoff`.
    /// - Returns: the diff of each topic that lost some.
    mutating func expire(before cutoff: ContinuousClock.Instant) -> [String: Diff] {
        var diffs: [String: Diff] = [:]
        for (topic, entries) in topics {
            for entry in entries.values where entry.client == nil && entry.refreshedAt < cutoff {
                let diff = untrack(topic: topic, ref: entry.ref)
                for (key, metas) in diff.leaves { diffs[topic, default: Diff()].leaves[key, default: []] += metas }
            }
        }
        return diffs
    }
}
