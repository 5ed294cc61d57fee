import Contracts
import EventBus
import Foundation
import LocalStack
import TestSupport
import Testing

/// `/realtime/v1/websocket`: Supabase Realtime's Phoenix channels against a running gateway that
/// reads the test Kafka cluster, with hand-driven WebSocket clients in both frame versions.
/// Changes are published as the services publish them (their schemas' examples, fresh ids).
@Suite("Supabase Realtime") struct SupabaseRealtimeTests {
    static func url(_ gateway: GatewayHarness, version: String = "2.0.0", apikey: String = "anon-key") -> String {
        "ws://127.0.0.1:\(gateway.app.port)/realtime/v1/websocket?apikey=\(apikey)&vsn=\(version)"
    }

    /// A join frame of `version`'s shape.
    static func join(
        _ topic: String,
        ref: String,
        token: String?,
        changes: [[String: Any]] = [],
        config extra: [String: Any] = [:],
        version: String = "2.0.0"
    ) throws -> String {
        var config: [String: Any] = [
            "broadcast": ["self": false, "ack": false], "presence": ["key": ""], "private": false, "postgres_changes": changes,
        ]
        config.merge(extra) { _, new in new }
        var payload: [String: Any] = ["config": config]
        if let token { payload["access_token"] = token }
        return try frame(join: ref, ref: ref, topic: topic, event: "phx_join", payload: payload, version: version)
    }

    static func frame(join: String?, ref: String?, topic: String, event: String, payload: [String: Any], version: String = "2.0.0") throws -> String {
        let value: Any =
            version == "2.0.0"
            ? [join ?? NSNull(), ref ?? NSNull(), topic, event, payload] as [Any]
            : ["join_ref": join ?? NSNull(), "ref": ref ?? NSNull(), "topic": topic, "event": event, "payload": payload] as [String: Any]
        return String(decoding: try JSONSerialization.data(withJSONObject: value), as: UTF8.self)
    }

    /// A broadcast as supabase-js (vsn 2.0.0) sends one: a binary frame of kind 3 with the sizes
    /// of the join ref, ref, topic, user event and metadata, the payload's encoding (1: JSON,
    /// 0: bytes), then each of them and the payload.
    static func binaryBroadcast(join: String, ref: String, topic: String, event: String, json: Bool, payload: [UInt8]) -> [UInt8] {
        let parts = [join, ref, topic, event, ""].map { Array($0.utf8) }
        return [3] + parts.map { UInt8($0.count) } + [json ? 1 : 0] + parts.flatMap { $0 } + payload
    }

    static func status(_ message: [String: Any]) -> String? { (message["payload"] as? [String: Any])?["status"] as? String }
    static func data(_ message: [String: Any]) -> [String: Any] { ((message["payload"] as? [String: Any])?["data"] as? [String: Any]) ?? [:] }

    @Test func anOrdersPartyFollowsItsUpdatesByIdAndSomeoneElsesJoinIsRefused() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            var examples = EventExamples()
            let placed = try examples.example(OrderPlaced.self)
            var moved = try examples.example(OrderStatusChanged.self)
            let order = placed.orderId.lowercased
            let customer = placed.parties.customerId
            try await TestKafka.shared.publish([placed], source: "/splash/tracking")

            let socket = RealtimeSocket(url: Self.url(gateway))
            defer { Task { await socket.disconnect() } }
            try await socket.send(try Self.frame(join: nil, ref: "1", topic: "phoenix", event: "heartbeat", payload: [:]))
            let beat = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "1" }
            #expect(beat["topic"] as? String == "phoenix" && Self.status(beat) == "ok")

            let binding: [String: Any] = ["event": "UPDATE", "schema": "public", "table": "orders", "filter": "id=eq.\(order.uppercased())"]
            try await socket.send(try Self.join("realtime:my-order", ref: "2", token: try gateway.token(user: customer), changes: [binding]))
            let joined = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "2" }
            #expect(Self.status(joined) == "ok", "\(joined)")
            let echoed = try #require(((joined["payload"] as? [String: Any])?["response"] as? [String: Any])?["postgres_changes"] as? [[String: Any]])
            #expect(echoed.count == 1 && echoed[0]["filter"] as? String == binding["filter"] as? String && echoed[0]["table"] as? String == "orders")
            let id = try #require(echoed[0]["id"] as? Int)
            let system = try await socket.phoenix { $0["event"] as? String == "system" }
            #expect(Self.status(system) == "ok" && system["topic"] as? String == "realtime:my-order")

            for (status, version) in [(OrderStatus.accepted, 2), (.preparing, 3)] {
                moved.status = status
                moved.version = version
                try await TestKafka.shared.publish([moved], source: "/splash/tracking")
                let change = try await socket.phoenix {
                    Self.data($0)["type"] as? String == "UPDATE"
                        && (Self.data($0)["record"] as? [String: Any])?["status"] as? String == status.rawValue
                }
                #expect(change["event"] as? String == "postgres_changes" && change["ref"] is NSNull && change["join_ref"] as? String == "2")
                #expect((change["payload"] as? [String: Any])?["ids"] as? [Int] == [id])
                let data = Self.data(change)
                #expect(data["schema"] as? String == "public" && data["table"] as? String == "orders" && data["errors"] is NSNull)
                #expect((data["commit_timestamp"] as? String).flatMap(EventJSON.parseTimestamp) != nil)
                #expect(
                    (data["record"] as? [String: Any])?["id"] as? String == order && (data["record"] as? [String: Any])?["version"] as? Int == version
                )
                #expect((data["old_record"] as? [String: Any])?["id"] as? String == order)
                let columns = try #require(data["columns"] as? [[String: Any]])
                #expect(Set(columns.compactMap { $0["name"] as? String }) == Set((data["record"] as? [String: Any] ?? [:]).keys))
            }

            // Another customer may not follow it: an error reply, not silence.
            let stranger = RealtimeSocket(url: Self.url(gateway))
            defer { Task { await stranger.disconnect() } }
            try await stranger.send(try Self.join("realtime:not-mine", ref: "1", token: try gateway.token(user: UUID()), changes: [binding]))
            let refused = try await stranger.phoenix { $0["event"] as? String == "phx_reply" }
            #expect(Self.status(refused) == "error", "\(refused)")
            // Nor does an unfiltered binding show them someone else's order.
            try await stranger.send(
                try Self.join(
                    "realtime:all-orders",
                    ref: "2",
                    token: try gateway.token(user: UUID()),
                    changes: [["event": "*", "schema": "public", "table": "orders"]]
                )
            )
            let answer1 = try await stranger.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "2" }
            #expect(Self.status(answer1) == "ok")
            moved.status = .readyForPickup
            moved.version = 4
            try await TestKafka.shared.publish([moved], source: "/splash/tracking")
            _ = try await socket.phoenix { (Self.data($0)["record"] as? [String: Any])?["status"] as? String == "ready_for_pickup" }
            #expect(!stranger.phoenixMessages.contains { $0["event"] as? String == "postgres_changes" })
        }
    }

    /// realtime-py speaks 1.0.0: objects with all five keys, `ref` null on a push. Anyone, with
    /// the anon key alone, follows profile changes.
    @Test func aVersionOneClientWithTheAnonKeyAloneReceivesProfileUpdates() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let socket = RealtimeSocket(url: Self.url(gateway, version: "1.0.0"))
            defer { Task { await socket.disconnect() } }
            try await socket.send(
                try Self.join(
                    "realtime:profiles",
                    ref: "1",
                    token: "anon-key",
                    changes: [["event": "UPDATE", "schema": "public", "table": "profiles"]],
                    version: "1.0.0"
                )
            )
            let joined = try await socket.phoenix { $0["event"] as? String == "phx_reply" }
            #expect(Self.status(joined) == "ok")
            var examples = EventExamples()
            let renamed = try examples.example(ProfileUpdated.self)
            try await TestKafka.shared.publish([renamed], source: "/splash/auth")
            // Other tests rename people too: this one's change, by its id.
            let id = renamed.userId.lowercased
            let change = try await socket.phoenix { (Self.data($0)["record"] as? [String: Any])?["id"] as? String == id }
            #expect(change["event"] as? String == "postgres_changes")
            let record = try #require(Self.data(change)["record"] as? [String: Any])
            #expect(record["id"] as? String == renamed.userId.lowercased && record["username"] as? String == renamed.username)
            #expect(record["email"] == nil)
            let raw = try #require(socket.messages.first { $0.contains(#""event":"postgres_changes""#) && $0.contains(id) })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["topic", "event", "payload", "ref", "join_ref"] && raw.contains(#""ref":null"#))
            // Restaurants too, pinned by id in upper case as Swift sends it.
            let changed = try examples.example(RestaurantChanged.self)
            try await socket.send(
                try Self.join(
                    "realtime:kitchen",
                    ref: "3",
                    token: "anon-key",
                    changes: [
                        [
                            "event": "UPDATE", "schema": "public", "table": "restaurants", "filter": "id=eq.\(changed.restaurantId.uuidString)",
                        ]
                    ],
                    version: "1.0.0"
                )
            )
            let kitchen = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "3" }
            #expect(Self.status(kitchen) == "ok")
            try await TestKafka.shared.publish([changed], source: "/splash/tracking")
            let restaurant = try await socket.phoenix { $0["topic"] as? String == "realtime:kitchen" && $0["event"] as? String == "postgres_changes" }
            let row = try #require(Self.data(restaurant)["record"] as? [String: Any])
            #expect(
                row["id"] as? String == changed.restaurantId.lowercased && row["is_open"] as? Bool == changed.isOpen
                    && row["name"] as? String == changed.name
            )
            // Rows only the signed-in may see are not for the anon key: an error reply.
            try await socket.send(
                try Self.join(
                    "realtime:posts",
                    ref: "2",
                    token: nil,
                    changes: [["event": "INSERT", "schema": "public", "table": "posts"]],
                    version: "1.0.0"
                )
            )
            let answer2 = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "2" }
            #expect(Self.status(answer2) == "error")
        }
    }

    @Test func broadcastReachesTheOthersOnTheTopicAndTheSenderOnlyWhenAsked() async throws {
        try await GatewayHarness.with { gateway in
            let alice = RealtimeSocket(url: Self.url(gateway))
            let bob = RealtimeSocket(url: Self.url(gateway, version: "1.0.0"))
            defer {
                Task {
                    await alice.disconnect()
                    await bob.disconnect()
                }
            }
            try await alice.send(
                try Self.join("realtime:room-1", ref: "1", token: try gateway.token(), config: ["broadcast": ["self": false, "ack": true]])
            )
            try await bob.send(
                try Self.join(
                    "realtime:room-1",
                    ref: "1",
                    token: try gateway.token(),
                    config: ["broadcast": ["self": true, "ack": false]],
                    version: "1.0.0"
                )
            )
            for socket in [alice, bob] {
                let answer3 = try await socket.phoenix { $0["event"] as? String == "phx_reply" }
                #expect(Self.status(answer3) == "ok")
            }

            try await alice.send(
                try Self.frame(
                    join: "1",
                    ref: "2",
                    topic: "realtime:room-1",
                    event: "broadcast",
                    payload: ["type": "broadcast", "event": "cursor", "payload": ["x": 3]]
                )
            )
            let heard = try await bob.phoenix { $0["event"] as? String == "broadcast" }
            let payload = try #require(heard["payload"] as? [String: Any])
            #expect(
                payload["event"] as? String == "cursor" && (payload["payload"] as? [String: Any])?["x"] as? Int == 3
                    && payload["type"] as? String == "broadcast",
                "\(bob.messages)"
            )
            let answer4 = try await alice.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "2" }
            #expect(Self.status(answer4) == "ok", "ack")

            try await bob.send(
                try Self.frame(
                    join: "1",
                    ref: "2",
                    topic: "realtime:room-1",
                    event: "broadcast",
                    payload: ["type": "broadcast", "event": "wave", "payload": [:]],
                    version: "1.0.0"
                )
            )
            _ = try await bob.phoenix { $0["event"] as? String == "broadcast" && ($0["payload"] as? [String: Any])?["event"] as? String == "wave" }
            _ = try await alice.phoenix { $0["event"] as? String == "broadcast" && ($0["payload"] as? [String: Any])?["event"] as? String == "wave" }
            #expect(
                !alice.phoenixMessages.contains {
                    $0["event"] as? String == "broadcast" && ($0["payload"] as? [String: Any])?["event"] as? String == "cursor"
                }
            )
        }
    }

    /// supabase-js's binary broadcasts: a 2.0.0 client hears one as supabase-js reads it (kind 4:
    /// the sizes of the topic, event and metadata, the encoding, then each and the payload), a
    /// 1.0.0 client as the text form when its payload is JSON; opaque bytes pass unchanged to 2.0.0
    /// clients and are not offered to 1.0.0 ones. The sender's `ack` is answered.
    @Test func binaryBroadcastsReachEachClientInTheFormItsVersionReads() async throws {
        try await GatewayHarness.with { gateway in
            let alice = RealtimeSocket(url: Self.url(gateway))
            let bob = RealtimeSocket(url: Self.url(gateway))
            let carol = RealtimeSocket(url: Self.url(gateway, version: "1.0.0"))
            defer { Task { for socket in [alice, bob, carol] { await socket.disconnect() } } }
            for (socket, version) in [(alice, "2.0.0"), (bob, "2.0.0"), (carol, "1.0.0")] {
                try await socket.send(
                    try Self.join(
                        "realtime:room-2",
                        ref: "1",
                        token: try gateway.token(),
                        config: ["broadcast": ["self": false, "ack": true]],
                        version: version
                    )
                )
                let reply = try await socket.phoenix { $0["event"] as? String == "phx_reply" }
                #expect(Self.status(reply) == "ok")
            }
            let json = Array(#"{"x":3,"name":"ä"}"#.utf8)
            try await alice.send(
                binary: Self.binaryBroadcast(join: "1", ref: "2", topic: "realtime:room-2", event: "cursor", json: true, payload: json)
            )
            let heard = try await bob.binary { $0.first == 4 }
            #expect(heard == [4, 15, 6, 0, 1] + Array("realtime:room-2cursor".utf8) + json)
            let converted = try await carol.phoenix { $0["event"] as? String == "broadcast" }
            let payload = try #require(converted["payload"] as? [String: Any])
            #expect(payload["type"] as? String == "broadcast" && payload["event"] as? String == "cursor", "\(payload)")
            #expect((payload["payload"] as? [String: Any])?["name"] as? String == "ä" && converted["topic"] as? String == "realtime:room-2")
            let ack = try await alice.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "2" }
            #expect(Self.status(ack) == "ok")

            let bytes: [UInt8] = [0, 255, 10, 13, 0x80]
            try await alice.send(
                binary: Self.binaryBroadcast(join: "1", ref: "3", topic: "realtime:room-2", event: "blob", json: false, payload: bytes)
            )
            // Then a text broadcast: once carol has it, she would have had the bytes before it.
            try await alice.send(
                try Self.frame(
                    join: "1",
                    ref: "4",
                    topic: "realtime:room-2",
                    event: "broadcast",
                    payload: ["type": "broadcast", "event": "after", "payload": [:]]
                )
            )
            let opaque = try await bob.binary { $0.count > 4 && $0[4] == 0 }
            #expect(opaque == [4, 15, 4, 0, 0] + Array("realtime:room-2blob".utf8) + bytes)
            _ = try await carol.phoenix { ($0["payload"] as? [String: Any])?["event"] as? String == "after" }
            #expect(carol.phoenixMessages.filter { $0["event"] as? String == "broadcast" }.count == 2, "\(carol.messages)")
            #expect(alice.binaryMessages.isEmpty, "not back to its sender")

            // A binary frame that is not a broadcast, or not whole, is answered, and the
            // connection stays.
            try await bob.send(binary: [3, 0, 0, 40, 1, 0, 1])
            let error = try await bob.phoenix { $0["event"] as? String == "phx_error" }
            #expect(((error["payload"] as? [String: Any])?["reason"] as? String)?.contains("binary") == true)
            try await bob.send(try Self.frame(join: nil, ref: "9", topic: "phoenix", event: "heartbeat", payload: [:]))
            _ = try await bob.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "9" }
        }
    }

    @Test func anExpiredTokenClosesItsChannelWithASystemErrorAndAFreshOneKeepsItOpen() async throws {
        try await GatewayHarness.with { gateway in
            let user = UUID()
            let socket = RealtimeSocket(url: Self.url(gateway))
            defer { Task { await socket.disconnect() } }
            let profiles: [[String: Any]] = [["event": "*", "schema": "public", "table": "profiles"]]
            try await socket.send(try Self.join("realtime:short", ref: "1", token: try gateway.token(user: user, expiresIn: 2), changes: profiles))
            try await socket.send(try Self.join("realtime:kept", ref: "2", token: try gateway.token(user: user, expiresIn: 2), changes: profiles))
            let short = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "1" }
            let kept = try await socket.phoenix { $0["event"] as? String == "phx_reply" && $0["ref"] as? String == "2" }
            #expect(Self.status(short) == "ok" && Self.status(kept) == "ok")
            try await socket.send(
                try Self.frame(
                    join: "2",
                    ref: "3",
                    topic: "realtime:kept",
                    event: "access_token",
                    payload: ["access_token": try gateway.token(user: user)]
                )
            )

            let expired = try await socket.phoenix { $0["event"] as? String == "system" && Self.status($0) == "error" }
            #expect(expired["topic"] as? String == "realtime:short")
            #expect(((expired["payload"] as? [String: Any])?["message"] as? String)?.contains("Token has expired") == true)
            let closed = try await socket.phoenix { $0["event"] as? String == "phx_close" }
            #expect(closed["topic"] as? String == "realtime:short")
            try await Task.sleep(for: .seconds(1))
            let keptClosed = socket.phoenixMessages.contains { message in
                message["topic"] as? String == "realtime:kept" && (message["event"] as? String == "phx_close" || Self.status(message) == "error")
            }
            #expect(!keptClosed)

            // The kept channel still hears changes.
            var examples = EventExamples()
            try await TestKafka.shared.publish([try examples.example(ProfileUpdated.self)], source: "/splash/auth")
            let change = try await socket.phoenix { $0["event"] as? String == "postgres_changes" }
            #expect(change["topic"] as? String == "realtime:kept")
        }
    }

    /// The protocol has no resume, so Splash's join takes `config.after`: the `event_id` of the
    /// last change the client saw. Rejoining within the window, it misses nothing.
    @Test func aClientRejoiningAfterItsLastChangeMissesNothing() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let user = UUID()
            let binding: [[String: Any]] = [["event": "UPDATE", "schema": "public", "table": "profiles", "filter": "id=eq.\(user.lowercased)"]]
            func renamed(_ name: String) -> ProfileUpdated {
                ProfileUpdated(userId: user, username: name, avatarUrl: nil, changed: [.username], updatedAt: Date())
            }
            let first = RealtimeSocket(url: Self.url(gateway))
            try await first.send(try Self.join("realtime:me", ref: "1", token: try gateway.token(user: user), changes: binding))
            _ = try await first.phoenix { $0["event"] as? String == "phx_reply" }
            try await TestKafka.shared.publish([renamed("seen_once")], source: "/splash/auth")
            let seen = try await first.phoenix { (Self.data($0)["record"] as? [String: Any])?["username"] as? String == "seen_once" }
            let last = try #require(Self.data(seen)["event_id"] as? String)
            await first.disconnect()

            try await TestKafka.shared.publish([renamed("while_away"), renamed("also_away")], source: "/splash/auth")
            try await Task.sleep(for: .milliseconds(300))
            let again = RealtimeSocket(url: Self.url(gateway))
            defer { Task { await again.disconnect() } }
            try await again.send(
                try Self.join("realtime:me", ref: "1", token: try gateway.token(user: user), changes: binding, config: ["after": last])
            )
            let reply = try await again.phoenix { $0["event"] as? String == "phx_reply" }
            #expect(Self.status(reply) == "ok")
            _ = try await again.phoenix { (Self.data($0)["record"] as? [String: Any])?["username"] as? String == "also_away" }
            let names = again.phoenixMessages.compactMap { (Self.data($0)["record"] as? [String: Any])?["username"] as? String }
            #expect(names == ["while_away", "also_away"])
            #expect(again.phoenixMessages.first?["event"] as? String == "phx_reply", "the reply comes before the replay")

            let lost = RealtimeSocket(url: Self.url(gateway))
            defer { Task { await lost.disconnect() } }
            try await lost.send(
                try Self.join("realtime:me", ref: "1", token: try gateway.token(user: user), changes: binding, config: ["after": UUID().uuidString])
            )
            let told = try await lost.phoenix { $0["event"] as? String == "system" && Self.status($0) == "error" }
            #expect(((told["payload"] as? [String: Any])?["message"] as? String)?.contains("load the rows again") == true)
        }
    }

    @Test func aWrongAPIKeyIsRefusedWhenTheGatewayHasOne() async throws {
        try await GatewayHarness.with(["GATEWAY_ANON_KEY": "the-anon-key-for-tests-0123456789"]) { gateway in
            let wrong = RealtimeSocket(url: Self.url(gateway, apikey: "another"))
            #expect(try await wrong.waitForClose().code == 4001)
            let right = RealtimeSocket(url: Self.url(gateway, apikey: "the-anon-key-for-tests-0123456789"))
            defer { Task { await right.disconnect() } }
            try await right.send(try Self.frame(join: nil, ref: "1", topic: "phoenix", event: "heartbeat", payload: [:]))
            let answer5 = try await right.phoenix { $0["event"] as? String == "phx_reply" }
            #expect(Self.status(answer5) == "ok")
        }
    }

    /// Gateways scale out: a client on each of two replicas gets the same changes, and a
    /// broadcast sent through one reaches the other (through `realtime.broadcasts`), once.
    @Test func clientsOnTwoReplicasShareChangesAndBroadcasts() async throws {
        try await GatewayHarness.with { first in
            try await GatewayHarness.with { second in
                try await first.waitForEventFeed()
                try await second.waitForEventFeed()
                let user = UUID()
                let sockets = [RealtimeSocket(url: Self.url(first)), RealtimeSocket(url: Self.url(second, version: "1.0.0"))]
                defer { Task { for socket in sockets { await socket.disconnect() } } }
                let profile: [[String: Any]] = [["event": "UPDATE", "schema": "public", "table": "profiles", "filter": "id=eq.\(user.lowercased)"]]
                for (index, socket) in sockets.enumerated() {
                    let version = index == 0 ? "2.0.0" : "1.0.0"
                    try await socket.send(
                        try Self.join(
                            "realtime:shared",
                            ref: "1",
                            token: try [first, second][index].token(user: user),
                            changes: profile,
                            version: version
                        )
                    )
                    let reply = try await socket.phoenix { $0["event"] as? String == "phx_reply" }
                    #expect(Self.status(reply) == "ok")
                }
                try await TestKafka.shared.publish(
                    [ProfileUpdated(userId: user, username: "on_both", avatarUrl: nil, changed: [.username], updatedAt: Date())],
                    source: "/splash/auth"
                )
                var ids: [String] = []
                for socket in sockets {
                    let change = try await socket.phoenix { (Self.data($0)["record"] as? [String: Any])?["username"] as? String == "on_both" }
                    ids.append(Self.data(change)["event_id"] as? String ?? "")
                }
                #expect(ids.count == 2 && ids[0] == ids[1] && !ids[0].isEmpty)

                try await sockets[0].send(
                    try Self.frame(
                        join: "1",
                        ref: "2",
                        topic: "realtime:shared",
                        event: "broadcast",
                        payload: ["type": "broadcast", "event": "hello", "payload": ["from": "first"]]
                    )
                )
                let heard = try await sockets[1].phoenix { $0["event"] as? String == "broadcast" }
                #expect(((heard["payload"] as? [String: Any])?["payload"] as? [String: Any])?["from"] as? String == "first")
                try await Task.sleep(for: .milliseconds(500))
                #expect(sockets[1].phoenixMessages.count { $0["event"] as? String == "broadcast" } == 1, "once")
                #expect(!sockets[0].phoenixMessages.contains { $0["event"] as? String == "broadcast" }, "not back to its sender")
                // supabase-js's binary broadcast crosses too, read on the other side by a 1.0.0 client.
                try await sockets[0].send(
                    binary: Self.binaryBroadcast(
                        join: "1",
                        ref: "3",
                        topic: "realtime:shared",
                        event: "bytes",
                        json: true,
                        payload: Array(#"{"from":"js"}"#.utf8)
                    )
                )
                let crossed = try await sockets[1].phoenix { ($0["payload"] as? [String: Any])?["event"] as? String == "bytes" }
                #expect(((crossed["payload"] as? [String: Any])?["payload"] as? [String: Any])?["from"] as? String == "js")
            }
        }
    }

    /// A client that stops reading is disconnected once its queue is full of changes (which are
    /// never dropped), its connection closed under a writer stuck on the full socket.
    @Test func aClientThatStopsReadingIsDisconnectedAsSlow() async throws {
        try await GatewayHarness.with([
            "GATEWAY_REALTIME_BUFFER": "16", "GATEWAY_REALTIME_SOCKET_BUFFER": "4KiB", "GATEWAY_REALTIME_HEARTBEAT": "25s",
        ]) { gateway in
            try await gateway.waitForEventFeed()
            let customer = UUID()
            let stuck = RealtimeSocket(url: Self.url(gateway), reads: false)
            try await stuck.send(
                try Self.join(
                    "realtime:orders",
                    ref: "1",
                    token: try gateway.token(user: customer),
                    changes: [["event": "*", "schema": "public", "table": "orders"]]
                )
            )
            try await Task.sleep(for: .milliseconds(500))
            let parties = OrderParties(customerId: customer, restaurantId: UUID(), restaurantOwnerId: UUID(), driverId: nil)
            @Sendable func disconnectedAsSlow() async -> Bool { await gateway.countsOneDisconnect("slow_client", transport: "supabase") }
            try await EventPublisher.with(gateway.kafka) { publisher in
                for round in 0..<40 {
                    // Small frames (about 600 bytes). Besides the 4 KiB socket buffer and the 16-frame
                    // queue, the client's own channel holds some reads before it stops reading, and
                    // its reads grow (up to 64 KiB) when each fills its buffer, as on a loaded
                    // machine: 100 a round fill it all within a few rounds; 25 a round once ran out
                    // of rounds under make test's load.
                    let batch = try (0..<100).map { index in
                        try EventEnvelope(
                            OrderStatusChanged(
                                orderId: UUID(),
                                parties: parties,
                                status: .accepted,
                                previousStatus: .placed,
                                by: OrderActor(userId: customer, role: .customer),
                                reason: nil,
                                version: round * 100 + index + 2,
                                changedAt: Date()
                            ),
                            source: "/splash/tracking"
                        ).record(topic: TopicCatalog.trackingOrders.name)
                    }
                    for result in await publisher.producer.send(batch) { _ = try result.get() }
                    if (try? await waitUntilReady("slow client disconnected", timeout: .seconds(3)) { await disconnectedAsSlow() }) != nil { break }
                }
            }
            try await waitUntilReady("slow client disconnected", timeout: .seconds(20)) { await disconnectedAsSlow() }
            #expect(try await gateway.get("/metrics").text.contains(#"realtime_connections{transport="supabase"} 0"#))
            await stuck.disconnect()
        }
    }
}
