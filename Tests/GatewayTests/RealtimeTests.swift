import Contracts
import EventBus
import Foundation
import Kafka
import LocalStack
import TestSupport
import Testing

/// `/v1/realtime` and `/v1/events` against a running gateway reading the test Kafka cluster,
/// with real WebSocket and SSE clients over sockets.
@Suite("Gateway realtime") struct RealtimeTests {
    @Test func aWebSocketSubscriberToProfilesReceivesProfileChangesAsCloudEventsWithoutEmail() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let socket = RealtimeSocket(url: gateway.webSocketURL + "?channels=profiles", token: try gateway.token())
            defer { Task { await socket.disconnect() } }
            _ = try await socket.message { $0["op"] as? String == "subscribed" && $0["channel"] as? String == "profiles" }

            let user = UUID()
            let event = ProfileUpdated(userId: user, username: "new_name", avatarUrl: nil, changed: [.username], updatedAt: Date())
            try await EventPublisher.with(gateway.kafka) { publisher in
                let id = try await publisher.publish(event, source: "/splash/auth")
                let pushed = try await socket.message { $0["id"] as? String == id }
                #expect(pushed["specversion"] as? String == "1.0")
                #expect(pushed["type"] as? String == "auth.profile.updated.v1")
                #expect(pushed["source"] as? String == "/splash/auth")
                #expect(pushed["subject"] as? String == user.uuidString.lowercased())
                #expect(pushed["channel"] as? String == "profiles")
                #expect((pushed["time"] as? String).flatMap(EventJSON.parseTimestamp) != nil)
                let data = try #require(pushed["data"] as? [String: Any])
                #expect(data["username"] as? String == "new_name")
                #expect(data["email"] == nil)
                #expect(!socket.messages.contains { $0.contains("@") })
            }
        }
    }

    @Test func aTokenCanComeAsTheFirstMessageAndAClientWithoutOneIsClosedWith4001() async throws {
        // Long enough for a loaded machine to get the first message out (loaded runs missed 500 ms
        // and then 2 s: the connection was closed before the token was sent).
        try await GatewayHarness.with(["GATEWAY_REALTIME_AUTH_TIMEOUT": "6s"]) { gateway in
            let user = UUID()
            let late = RealtimeSocket(url: gateway.webSocketURL)
            try await late.send(#"{"op":"auth","token":"\#(try gateway.token(user: user))"}"#)
            let ready = try await late.message { $0["op"] as? String == "ready" }
            #expect(ready["user"] as? String == user.uuidString.lowercased())
            try await late.send(#"{"op":"subscribe","channel":"me","ref":"7"}"#)
            let subscribed = try await late.message { $0["op"] as? String == "subscribed" }
            #expect(subscribed["channel"] as? String == "me")
            #expect(subscribed["ref"] as? String == "7")
            try await late.send(#"{"op":"ping"}"#)
            _ = try await late.message { $0["op"] as? String == "pong" }
            try await late.send("not json")
            _ = try await late.message { $0["code"] as? String == "bad_message" }
            await late.disconnect()

            let silent = RealtimeSocket(url: gateway.webSocketURL)
            let closed = try await silent.waitForClose()
            #expect(closed.code == 4001)

            let forged = RealtimeSocket(url: gateway.webSocketURL)
            try await forged.send(#"{"op":"auth","token":"\#(try gateway.token(key: .generate()))"}"#)
            #expect(try await forged.waitForClose().code == 4001)

            let subscribeFirst = RealtimeSocket(url: gateway.webSocketURL)
            try await subscribeFirst.send(#"{"op":"subscribe","channel":"profiles"}"#)
            #expect(try await subscribeFirst.waitForClose().code == 4001)
        }
    }

    @Test func badTokensAndConnectionFloodsAreClosedWithDocumentedCodesAndPlainGetsGet426() async throws {
        try await GatewayHarness.with(["GATEWAY_RATE_LIMIT_REALTIME": "3/1m"]) { gateway in
            let plain = try await gateway.get("/v1/realtime", bearer: try gateway.token())
            #expect(plain.status == 426)
            #expect(try plain.json()["type"] as? String == "urn:splash:problem:websocket-required")

            let expired = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(expiresIn: -10))
            let expiredClose = try await expired.waitForClose()
            #expect(expiredClose.code == 4002)
            let forged = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(key: .generate()))
            #expect(try await forged.waitForClose().code == 4001)

            let user = UUID()
            var sockets: [RealtimeSocket] = []
            for _ in 0..<3 {
                let socket = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: user))
                _ = try await socket.message { $0["op"] as? String == "ready" }
                sockets.append(socket)
            }
            let flood = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: user))
            let refused = try await flood.waitForClose()
            #expect(refused.code == 1013)
            #expect(refused.reason?.contains("At most 3 realtime connections") == true)
            for socket in sockets { await socket.disconnect() }
        }
    }

    @Test func ordersAreFollowedOnlyByTheirPartiesAndAdminsAndOthersGetAnErrorFrame() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let (customer, stranger, driver, owner) = (UUID(), UUID(), UUID(), UUID())
            let order = UUID()
            let channel = "orders:\(order.uuidString.lowercased())"
            try await EventPublisher.with(gateway.kafka) { publisher in
                let parties = OrderParties(customerId: customer, restaurantId: UUID(), restaurantOwnerId: owner, driverId: nil)
                try await publisher.publish(
                    OrderPlaced(
                        orderId: order,
                        parties: parties,
                        items: [.init(menuItemId: "m1", name: "Soup", quantity: 2, unitPriceCents: 900)],
                        totalCents: 1_800,
                        dropoff: .init(address: "Aleksanterinkatu 1", lat: 60.17, lng: 24.95),
                        etaSeconds: nil,
                        placedAt: Date()
                    )
                )

                let theirs = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: customer))
                let others = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: stranger))
                let admin = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(role: "admin"))
                // The restaurant signs in as its owner's account.
                let kitchen = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: owner, role: "restaurant"))
                defer { Task { for socket in [theirs, others, admin, kitchen] { await socket.disconnect() } } }
                for socket in [theirs, others, admin, kitchen] {
                    try await socket.send(#"{"op":"subscribe","channel":"\#(channel)","ref":"o"}"#)
                }
                _ = try await theirs.message { $0["op"] as? String == "subscribed" && $0["channel"] as? String == channel }
                _ = try await admin.message { $0["op"] as? String == "subscribed" }
                _ = try await kitchen.message { $0["op"] as? String == "subscribed" }
                let refused = try await others.message { $0["op"] as? String == "error" }
                #expect(refused["code"] as? String == "forbidden")
                #expect(refused["channel"] as? String == channel)
                #expect(refused["ref"] as? String == "o")

                var assigned = parties
                assigned.driverId = driver
                let move = OrderStatusChanged(
                    orderId: order,
                    parties: assigned,
                    status: .pickedUp,
                    previousStatus: .arrivedAtPickup,
                    by: .init(userId: driver, role: .driver),
                    reason: nil,
                    version: 9,
                    changedAt: Date()
                )
                // The v1 twin (published beside it for v1 consumers) is not pushed: the v2 one is.
                let twin = try await publisher.publish(try #require(move.v1(after: .ready)))
                let status = try await publisher.publish(move)
                let position = try await publisher.publish(
                    DriverLocationUpdated(
                        driverId: driver,
                        orderId: order,
                        latitude: 60.17,
                        longitude: 24.94,
                        heading: 90,
                        speedMps: 8,
                        accuracyM: 5,
                        etaSeconds: 300,
                        recordedAt: Date()
                    )
                )
                for socket in [theirs, admin, kitchen] {
                    let pushed = try await socket.message { $0["id"] as? String == status || $0["id"] as? String == twin }
                    #expect(pushed["id"] as? String == status)
                    let moved = try await socket.message { $0["id"] as? String == position }
                    #expect(moved["channel"] as? String == channel)
                }
                // Assigned now, the driver may follow the order too; the stranger still saw nothing.
                let driving = RealtimeSocket(
                    url: gateway.webSocketURL + "?channels=\(channel)",
                    token: try gateway.token(user: driver, role: "driver")
                )
                defer { Task { await driving.disconnect() } }
                _ = try await driving.message { $0["op"] as? String == "subscribed" }
                #expect(!others.messages.contains { $0.contains(status) || $0.contains(position) })
            }
        }
    }

    @Test func theMeChannelCarriesOnlyTheUsersOwnEvents() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let (alice, bob) = (UUID(), UUID())
            let socket = RealtimeSocket(url: gateway.webSocketURL + "?channels=me", token: try gateway.token(user: alice))
            defer { Task { await socket.disconnect() } }
            _ = try await socket.message { $0["op"] as? String == "subscribed" }
            try await EventPublisher.with(gateway.kafka) { publisher in
                let bobs = try await publisher.publish(
                    EditCompleted(
                        editId: UUID(),
                        userId: bob,
                        width: 1080,
                        height: 720,
                        bytes: 300_000,
                        quality: 85,
                        format: .jpeg,
                        completedAt: Date()
                    )
                )
                let alices = try await publisher.publish(
                    EditFailed(editId: UUID(), userId: alice, reason: "The photo is not a JPEG, PNG or WebP.", failedAt: Date())
                )
                let pushed = try await socket.message { $0["id"] as? String == alices }
                #expect(pushed["channel"] as? String == "me")
                #expect(pushed["type"] as? String == "render.edit.failed.v1")
                #expect(!socket.messages.contains { $0.contains(bobs) })
            }
        }
    }

    /// An outbox relay that lost a delivery report publishes the row again, under the same id: a
    /// client is shown it once.
    @Test func anEventDeliveredTwiceIsPushedOnce() async throws {
        try await GatewayHarness.with { gateway in
            try await gateway.waitForEventFeed()
            let alice = UUID()
            let socket = RealtimeSocket(url: gateway.webSocketURL + "?channels=me", token: try gateway.token(user: alice))
            defer { Task { await socket.disconnect() } }
            _ = try await socket.message { $0["op"] as? String == "subscribed" }
            try await EventPublisher.with(gateway.kafka) { publisher in
                let done = try EventEnvelope(
                    EditCompleted(
                        editId: UUID(),
                        userId: alice,
                        width: 1080,
                        height: 720,
                        bytes: 300_000,
                        quality: 85,
                        format: .jpeg,
                        completedAt: Date()
                    ),
                    source: "/splash/edit-render"
                )
                let id = try await publisher.publish(done, on: EditCompleted.topic)
                _ = try await socket.message { $0["id"] as? String == id }
                try await publisher.publish(done, on: EditCompleted.topic)
                // Another event on the same key follows the repeat on its partition: once it is
                // pushed, the repeat was read.
                var another = done
                another.id = UUID()
                let next = try await publisher.publish(another, on: EditCompleted.topic)
                _ = try await socket.message { $0["id"] as? String == next }
                #expect(socket.messages.filter { $0.contains(id) }.count == 1)
            }
        }
    }

    @Test func aConnectionClosesWith4002WhenItsTokenExpiresUnlessRefreshed() async throws {
        try await GatewayHarness.with { gateway in
            let user = UUID()
            let expiring = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: user, expiresIn: 2))
            _ = try await expiring.message { $0["op"] as? String == "ready" }
            // Its first token leaves 5 s to connect and send the fresh one: a loaded run took more
            // than 2 s for that.
            let firstExpiry = ContinuousClock.now + .seconds(5)
            let refreshed = RealtimeSocket(url: gateway.webSocketURL, token: try gateway.token(user: user, expiresIn: 5))
            _ = try await refreshed.message { $0["op"] as? String == "ready" }
            try await refreshed.send(#"{"op":"auth","token":"\#(try gateway.token(user: user, expiresIn: 600))"}"#)
            _ = try await refreshed.message {
                ($0["expiresAt"] as? String).map { $0 > ISO8601DateFormatter().string(from: Date().addingTimeInterval(300)) } == true
            }

            let closed = try await expiring.waitForClose(within: .seconds(6))
            #expect(closed.code == 4002)
            // Past its first token's expiry (a whole second, as tokens count seconds), it is open.
            try await Task.sleep(until: firstExpiry + .seconds(1))
            #expect(refreshed.closeFrame == nil)
            // A fresh token for somebody else does not take over the connection.
            try await refreshed.send(#"{"op":"auth","token":"\#(try gateway.token())"}"#)
            #expect(try await refreshed.waitForClose().code == 4003)
        }
    }

    @Test func sseStreamsEventsAndResumesFromLastEventIDWithinTheReplayWindow() async throws {
        // Frequent heartbeats: the gateway notices a client has gone at its next write.
        try await GatewayHarness.with(["GATEWAY_REALTIME_HEARTBEAT": "500ms"]) { gateway in
            try await gateway.waitForEventFeed()
            let url = "http://127.0.0.1:\(gateway.app.port)/v1/events?channels=profiles"
            let token = try gateway.token()
            let stream = EventStreamClient(url: url, token: token)
            #expect(try await stream.waitForStatus() == 200)
            try await EventPublisher.with(gateway.kafka) { publisher in
                let first = try await publisher.publish(
                    ProfileUpdated(userId: UUID(), username: "first", avatarUrl: nil, changed: [.username], updatedAt: Date())
                )
                let received = try await stream.event { $0.id == first }
                #expect(received.event == "auth.profile.updated.v1")
                let json = try #require(try JSONSerialization.jsonObject(with: Data(received.data.utf8)) as? [String: Any])
                #expect(json["id"] as? String == first)
                #expect((json["data"] as? [String: Any])?["username"] as? String == "first")
                await stream.stop()

                // Missed while away, then resumed. The watcher, connected before they are
                // published, tells when the gateway has both in its window.
                let watcher = EventStreamClient(url: url, token: token)
                #expect(try await watcher.waitForStatus() == 200)
                let second = try await publisher.publish(
                    ProfileUpdated(userId: UUID(), username: "second", avatarUrl: nil, changed: [.username], updatedAt: Date())
                )
                let third = try await publisher.publish(
                    ProfileUpdated(userId: UUID(), username: "third", avatarUrl: nil, changed: [.username], updatedAt: Date())
                )
                _ = try await watcher.event { $0.id == second }
                _ = try await watcher.event { $0.id == third }
                await watcher.stop()
                let resumed = EventStreamClient(url: url, token: token, lastEventID: first)
                // Both missed events, and not the one it had; the two are about different users, so
                // on different partitions, in no set order (waiting for one alone may look before
                // the other has come).
                _ = try await resumed.event { $0.id == second }
                _ = try await resumed.event { $0.id == third }
                #expect(!Set(resumed.events.compactMap(\.id)).contains(first))
                await resumed.stop()

                let unknown = EventStreamClient(url: url, token: token, lastEventID: UUID().uuidString.lowercased())
                let gap = try await unknown.event { $0.event == "replay-unavailable" }
                #expect(gap.data.contains("replay window"))
                await unknown.stop()
            }
        }
    }

    /// The `admin` channel: every event of the public topics, those pushed to no one else too (a
    /// v1 twin, a position between orders); refused to anyone else. An admin's stream that drops
    /// and resumes with `Last-Event-ID` gets what happened while no admin followed.
    @Test func theAdminChannelCarriesEveryEventToAdminsOnlyAndResumesWithoutAGap() async throws {
        try await GatewayHarness.with(["GATEWAY_REALTIME_HEARTBEAT": "500ms"]) { gateway in
            try await gateway.waitForEventFeed()
            let url = "http://127.0.0.1:\(gateway.app.port)/v1/events?channels=admin"
            let refused = EventStreamClient(url: url, token: try gateway.token(role: "customer"))
            #expect(try await refused.waitForStatus() == 403)
            await refused.stop()
            let token = try gateway.token(role: "admin")
            let stream = EventStreamClient(url: url, token: token)
            #expect(try await stream.waitForStatus() == 200)
            try await EventPublisher.with(gateway.kafka) { publisher in
                let driver = UUID()
                let between = try await publisher.publish(
                    DriverLocationUpdated(
                        driverId: driver,
                        orderId: nil,
                        latitude: 60.17,
                        longitude: 24.94,
                        heading: nil,
                        speedMps: 3,
                        accuracyM: 5,
                        etaSeconds: nil,
                        recordedAt: Date()
                    )
                )
                let received = try await stream.event { $0.id == between }
                #expect(received.event == DriverLocationUpdated.type)
                #expect(received.data.contains(#""channel":"admin""#))
                await stream.stop()
                // The gateway notices the stream has gone at its next heartbeat.
                try await Task.sleep(for: .seconds(2))

                // No admin follows now; the events still reach the window for one who comes back.
                let missed = try await publisher.publish(
                    ProfileUpdated(userId: UUID(), username: "while_away", avatarUrl: nil, changed: [.username], updatedAt: Date())
                )
                let watcher = EventStreamClient(url: "http://127.0.0.1:\(gateway.app.port)/v1/events?channels=profiles", token: try gateway.token())
                #expect(try await watcher.waitForStatus() == 200)
                let after = try await publisher.publish(
                    ProfileUpdated(userId: UUID(), username: "after", avatarUrl: nil, changed: [.username], updatedAt: Date())
                )
                _ = try await watcher.event { $0.id == after }
                await watcher.stop()
                let resumed = EventStreamClient(url: url, token: token, lastEventID: between)
                _ = try await resumed.event { $0.id == missed }
                _ = try await resumed.event { $0.id == after }
                await resumed.stop()
            }
        }
    }

    @Test func anSSEStreamEndsWithACloseEventWhenItsTokenExpires() async throws {
        try await GatewayHarness.with { gateway in
            let stream = EventStreamClient(url: "http://127.0.0.1:\(gateway.app.port)/v1/events?channels=me", token: try gateway.token(expiresIn: 2))
            #expect(try await stream.waitForStatus() == 200)
            let close = try await stream.event(within: .seconds(6)) { $0.event == "close" }
            #expect(close.data == #"{"reason":"token_expired"}"#)
            try await waitUntilReady("the stream's end", timeout: .seconds(5)) { stream.hasEnded }
            await stream.stop()
        }
    }

    @Test func whenTheGatewayShutsDownSSEStreamsAreToldAndEndAtOnce() async throws {
        try await GatewayHarness.with { gateway in
            let stream = EventStreamClient(url: "http://127.0.0.1:\(gateway.app.port)/v1/events?channels=profiles", token: try gateway.token())
            #expect(try await stream.waitForStatus() == 200)
            try await waitUntilReady("the stream's preface", timeout: .seconds(5)) { stream.raw.contains(": connected") }
            let stopping = ContinuousClock.now
            await gateway.app.beginShutdown()
            let close = try await stream.event(within: .seconds(5)) { $0.event == "close" }
            #expect(close.data == #"{"reason":"shutdown"}"#)
            try await waitUntilReady("the stream to end", timeout: .seconds(5)) { stream.hasEnded }
            // Not held until the shutdown grace (20 s here) runs out.
            #expect(ContinuousClock.now - stopping < .seconds(5))
            await stream.stop()
        }
    }

    @Test func whenTheGatewayShutsDownWebSocketsGetACloseFrame() async throws {
        try await GatewayHarness.with { gateway in
            // The upgrade passed through the direct path's handler, which leaves the shutdown
            // notice to the WebSocket's own handling rather than closing the connection itself.
            let socket = RealtimeSocket(url: gateway.webSocketURL + "?channels=profiles", token: try gateway.token())
            _ = try await socket.message { $0["op"] as? String == "subscribed" }
            let stopping = ContinuousClock.now
            await gateway.app.beginShutdown()
            let close = try await socket.waitForClose(within: .seconds(10))
            #expect(close.code != nil, "closed without a close frame: \(close.reason ?? "")")
            #expect(ContinuousClock.now - stopping < .seconds(10))
        }
    }

    @Test func sseRefusesMissingTokensUnknownChannelsAndOtherPeoplesOrders() async throws {
        try await GatewayHarness.with { gateway in
            let base = "http://127.0.0.1:\(gateway.app.port)/v1/events"
            let anonymous = EventStreamClient(url: base + "?channels=profiles", token: nil)
            #expect(try await anonymous.waitForStatus() == 401)
            let unknown = EventStreamClient(url: base + "?channels=everything", token: try gateway.token())
            #expect(try await unknown.waitForStatus() == 422)
            let order = UUID().uuidString.lowercased()
            let foreign = EventStreamClient(url: base + "?channels=orders:\(order)", token: try gateway.token())
            #expect(try await foreign.waitForStatus(within: .seconds(8)) == 403)
            try await waitUntilReady("the refusal's body", timeout: .seconds(5)) { foreign.hasEnded }
            #expect(foreign.raw.contains("urn:splash:problem:channel-forbidden"))
            for client in [anonymous, unknown, foreign] { await client.stop() }
        }
    }

    @Test func aClientThatStopsReadingIsDisconnectedAsSlowAndCountedInMetrics() async throws {
        try await GatewayHarness.with(["GATEWAY_REALTIME_BUFFER": "16", "GATEWAY_REALTIME_SOCKET_BUFFER": "4KiB"]) { gateway in
            try await gateway.waitForEventFeed()
            let customer = UUID()
            let order = UUID()
            let parties = OrderParties(customerId: customer, restaurantId: UUID(), restaurantOwnerId: UUID(), driverId: UUID())
            let stuck = RealtimeSocket(url: gateway.webSocketURL + "?channels=me", token: try gateway.token(user: customer), reads: false)
            try await Task.sleep(for: .milliseconds(500))
            // Until the socket buffers (the gateway's capped at 4 KiB, the client's receive buffer,
            // NIO's outbound buffer) and the 16-frame queue are full. Order events are never
            // dropped; these carry 16 KiB each, so some dozens do it.
            let items = (0..<8).map {
                OrderItem(
                    menuItemId: "m\($0)",
                    name: "Soup \($0) " + String(repeating: "with extra croutons ", count: 100),
                    quantity: 1,
                    unitPriceCents: 1_000
                )
            }
            let placed = OrderPlaced(
                orderId: order,
                parties: parties,
                items: items,
                totalCents: 8_000,
                dropoff: .init(address: "Mannerheimintie 1", lat: 60.17, lng: 24.94),
                etaSeconds: nil,
                placedAt: Date()
            )
            // Each batch new events: a repeated id is pushed once.
            @Sendable func batch() throws -> [KafkaRecord] {
                try (0..<25).map { _ in try EventEnvelope(placed, source: "/splash/tracking").record(topic: TopicCatalog.trackingOrders.name) }
            }
            @Sendable func disconnectedAsSlow() async -> Bool { await gateway.countsOneDisconnect("slow_client", transport: "websocket") }
            // A batch at a time, each given a few seconds to be pushed: the feed is not flooded
            // with events the disconnect no longer needs.
            try await EventPublisher.with(gateway.kafka) { publisher in
                for _ in 0..<40 {
                    for result in await publisher.producer.send(try batch()) { _ = try result.get() }
                    if (try? await waitUntilReady("slow client disconnected", timeout: .seconds(3)) { await disconnectedAsSlow() }) != nil { break }
                }
            }
            try await waitUntilReady("slow client disconnected", timeout: .seconds(20)) { await disconnectedAsSlow() }
            #expect(try await gateway.get("/metrics").text.contains(#"realtime_connections{transport="websocket"} 0"#))
            await stuck.disconnect()
        }
    }
}
