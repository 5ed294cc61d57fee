import Contracts
import Foundation
import Identity
import Kafka
import LocalStack
import TestSupport
import Testing

@testable import Gateway

/// Supabase Realtime presence: realtime-py clients on two replicas see each other; a replica that
/// falls silent leaves no ghosts; a socket's limits hold.
@Suite("Realtime presence") struct PresenceTests {
    typealias Frames = SupabaseRealtimeTests

    @Test func twoRealtimePyClientsOnTwoReplicasSeeEachOtherComeChangeAndGo() async throws {
        try await GatewayHarness.with { first in
            try await GatewayHarness.with { second in
                try await first.waitForEventFeed()
                try await second.waitForEventFeed()
                let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("presence_check.py")
                let output = try await ProcessCommand(
                    URL(fileURLWithPath: "/usr/bin/env"),
                    [
                        "python3", script.path, "http://127.0.0.1:\(first.app.port)", "http://127.0.0.1:\(second.app.port)", "anon-key",
                        try first.token(user: UUID()), try second.token(user: UUID()),
                    ]
                ).runToCompletion()
                #expect(output.contains("all steps passed"), "\(output)")
            }
        }
    }

    /// Another replica's entries, heard of in its heartbeat, are shown; when its heartbeats stop
    /// (it died: nobody untracked anything) they are dropped within the expiry, and the clients
    /// told.
    @Test func aReplicaThatFallsSilentLeavesNoGhosts() async throws {
        try await GatewayHarness.with(["GATEWAY_PRESENCE_HEARTBEAT": "200ms", "GATEWAY_PRESENCE_EXPIRY": "1500ms"]) { gateway in
            try await gateway.waitForEventFeed()
            let socket = RealtimeSocket(url: Frames.url(gateway, version: "1.0.0"))
            defer { Task { await socket.disconnect() } }
            let topic = "realtime:ghosts-\(UUID().uuidString.prefix(6))"
            try await socket.send(
                try Frames.join(topic, ref: "1", token: nil, config: ["presence": ["key": "watcher", "enabled": true]], version: "1.0.0")
            )
            let state = try await socket.phoenix { $0["event"] as? String == "presence_state" }
            #expect((state["payload"] as? [String: Any])?.isEmpty == true, "nobody yet: \(state)")

            let heartbeat = PresenceRelay.Record(
                origin: "replica-that-dies",
                op: .heartbeat,
                entries: [.init(topic: topic, key: "driver-7", ref: "ghostref1", state: ["on_shift": .bool(true)])]
            )
            let record = KafkaRecord(
                topic: TopicCatalog.gatewayPresence.name,
                key: "replica-that-dies",
                value: Array(try JSONEncoder().encode(heartbeat))
            )
            let sentAt = ContinuousClock.now
            try await TestKafka.shared.publish(records: [record])
            let joined = try await socket.phoenix { Self.keys($0, "joins").contains("driver-7") }
            let meta = try #require(Self.metas(joined, "joins", "driver-7").first)
            #expect(meta["on_shift"] as? Bool == true && meta["phx_ref"] as? String == "ghostref1")
            // The same heartbeat again (redelivered, or the next beat): nothing new to tell.
            try await TestKafka.shared.publish(records: [record])
            // Then silence: dropped after the expiry (1.5 s), not before, and not much after.
            let left = try await socket.phoenix(within: .seconds(10)) { Self.keys($0, "leaves").contains("driver-7") }
            let after = ContinuousClock.now - sentAt
            #expect(after >= .milliseconds(1_400) && after < .seconds(6), "dropped after \(after)")
            #expect(Self.metas(left, "leaves", "driver-7").first?["phx_ref"] as? String == "ghostref1")
            #expect(socket.phoenixMessages.filter { Self.keys($0, "joins").contains("driver-7") }.count == 1, "one join, not one per beat")
        }
    }

    /// One socket tracks at most 100 presences (one per joined channel), and sends at most ten
    /// presence messages a second; a state over 4 KB is refused; none of it disturbs the socket.
    @Test func aSocketsPresenceIsBounded() async throws {
        try await GatewayHarness.with { gateway in
            let socket = RealtimeSocket(url: Frames.url(gateway))
            defer { Task { await socket.disconnect() } }
            let prefix = "realtime:many-\(UUID().uuidString.prefix(6))"
            // Ten a second, as the limit allows: 100 tracked, the 101st refused.
            for index in 0...100 {
                let topic = "\(prefix)-\(index)"
                try await socket.send(try Frames.join(topic, ref: "j\(index)", token: nil, config: ["presence": ["key": "k\(index)"]]))
                try await socket.send(
                    try Frames.frame(
                        join: "j\(index)",
                        ref: "t\(index)",
                        topic: topic,
                        event: "presence",
                        payload: ["type": "presence", "event": "track", "payload": ["n": index]]
                    )
                )
                if index % 10 == 9 { try await Task.sleep(for: .milliseconds(1_050)) }
            }
            // Joined without presence enabled: the track turned it on, as Supabase Realtime does.
            let firstState = try await socket.phoenix { $0["event"] as? String == "presence_state" && $0["topic"] as? String == "\(prefix)-0" }
            #expect(firstState["join_ref"] as? String == "j0")
            let refused = try await socket.phoenix { $0["ref"] as? String == "t100" && $0["event"] as? String == "phx_reply" }
            #expect(Frames.status(refused) == "error", "\(refused)")
            #expect(Self.reason(refused)?.contains("at most 100") == true, "\(refused)")
            let accepted = socket.phoenixMessages.filter { ($0["ref"] as? String)?.hasPrefix("t") == true && Frames.status($0) == "ok" }
            #expect(accepted.count == 100)
            // A burst of changes: past the ten a second allows, refused (25, so that the burst is
            // over the limit however slowly a loaded machine reads it).
            try await Task.sleep(for: .milliseconds(1_100))
            for change in 0..<25 {
                try await socket.send(
                    try Frames.frame(
                        join: "j0",
                        ref: "c\(change)",
                        topic: "\(prefix)-0",
                        event: "presence",
                        payload: ["type": "presence", "event": "track", "payload": ["n": change]]
                    )
                )
            }
            _ = try await socket.phoenix { $0["ref"] as? String == "c24" && $0["event"] as? String == "phx_reply" }
            let replies = socket.phoenixMessages.filter { ($0["ref"] as? String)?.hasPrefix("c") == true }
            #expect(replies.filter { Frames.status($0) == "ok" }.count >= 10, "the first ten go")
            #expect(replies.contains { Self.reason($0)?.contains("at most 10 presence messages") == true }, "\(replies)")
            // A state too large.
            try await Task.sleep(for: .milliseconds(1_100))
            try await socket.send(
                try Frames.frame(
                    join: "j1",
                    ref: "big",
                    topic: "\(prefix)-1",
                    event: "presence",
                    payload: ["type": "presence", "event": "track", "payload": ["blob": String(repeating: "x", count: 5_000)]]
                )
            )
            let big = try await socket.phoenix { $0["ref"] as? String == "big" && $0["event"] as? String == "phx_reply" }
            #expect(Self.reason(big)?.contains("4096 bytes") == true, "\(big)")
            // The socket still answers.
            try await socket.send(try Frames.frame(join: nil, ref: "hb", topic: "phoenix", event: "heartbeat", payload: [:]))
            #expect(Frames.status(try await socket.phoenix { $0["ref"] as? String == "hb" }) == "ok")
        }
    }

    static func keys(_ message: [String: Any], _ side: String) -> [String] {
        guard message["event"] as? String == "presence_diff" else { return [] }
        return Array((((message["payload"] as? [String: Any])?[side]) as? [String: Any] ?? [:]).keys)
    }

    static func metas(_ message: [String: Any], _ side: String, _ key: String) -> [[String: Any]] {
        let byKey = ((message["payload"] as? [String: Any])?[side]) as? [String: Any]
        return ((byKey?[key] as? [String: Any])?["metas"] as? [[String: Any]]) ?? []
    }

    static func reason(_ reply: [String: Any]) -> String? {
        (((reply["payload"] as? [String: Any])?["response"]) as? [String: Any])?["reason"] as? String
    }
}

/// The presence table alone: joins, updates, leaves and expiry as Phoenix Presence diffs them.
@Suite("Presence table") struct PresenceTableTests {
    func entry(
        _ key: String,
        ref: String,
        client: UInt64?,
        state: [String: JSONValue] = [:],
        at: ContinuousClock.Instant = .now
    ) -> PresenceTable.Entry {
        PresenceTable.Entry(
            topic: "realtime:t",
            key: key,
            ref: ref,
            state: state,
            origin: client == nil ? "other" : "here",
            client: client,
            refreshedAt: at
        )
    }

    @Test func anUpdateLeavesTheOldMetaAndJoinsTheNewNamingIt() {
        var table = PresenceTable()
        let first = table.track(entry("aino", ref: "r1", client: 1, state: ["s": .string("online")]))
        #expect(first.diff.joins["aino"]?.count == 1 && first.diff.leaves.isEmpty && first.replaced == nil)
        let second = table.track(entry("aino", ref: "r2", client: 1, state: ["s": .string("away")]))
        #expect(second.replaced == "r1")
        #expect(second.diff.leaves["aino"] == [.object(["s": .string("online"), "phx_ref": .string("r1")])])
        #expect(second.diff.joins["aino"] == [.object(["s": .string("away"), "phx_ref": .string("r2"), "phx_ref_prev": .string("r1")])])
        #expect(
            table.state(of: "realtime:t")
                == .object(["aino": .object(["metas": .array([.object(["s": .string("away"), "phx_ref": .string("r2")])])])])
        )
        #expect(table.tracked(by: 1) == 1)
        let gone = table.untrack(topic: "realtime:t", ref: "r2")
        #expect(gone.leaves["aino"]?.count == 1 && table.tracked(by: 1) == 0 && table.state(of: "realtime:t") == .object([:]))
    }

    @Test func onlyTheOtherReplicasSilentEntriesExpireAndAHeartbeatRefreshes() {
        var table = PresenceTable()
        let start = ContinuousClock.now
        _ = table.track(entry("mine", ref: "m", client: 7, at: start))
        _ = table.track(entry("theirs", ref: "t", client: nil, at: start))
        _ = table.track(entry("fresh", ref: "f", client: nil, at: start))
        // A heartbeat's mention of a known entry tells nothing and refreshes it.
        let beat = table.track(entry("fresh", ref: "f", client: nil, at: start + .seconds(20)))
        #expect(beat.diff.isEmpty)
        let expired = table.expire(before: start + .seconds(10))
        #expect(expired["realtime:t"]?.leaves.keys.sorted() == ["theirs"])
        #expect(table.local().map(\.key) == ["mine"])
        #expect(table.entry(topic: "realtime:t", ref: "f") != nil)
    }
}
