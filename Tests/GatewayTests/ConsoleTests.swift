import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Kafka
import LocalStack
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import ServiceKit
import TestSupport
import Testing

/// The console (`/console`) on a running stack: auth, tracking and the gateway as processes.
@Suite("the console") struct ConsoleTests {
    static let pages = [
        "/console", "/console/events", "/console/consumers", "/console/dead-letters", "/console/users", "/console/deliveries",
        "/console/notifications", "/console/mail", "/console/assets/console.js",
    ]
    static let reads = [
        "/console/api/events", "/console/api/consumers", "/console/api/dead-letters", "/console/api/users", "/console/api/deletions",
        "/console/api/restaurants",
        "/console/api/orders/\(UUID())", "/console/api/roads", "/console/api/notifications", "/console/api/mail",
    ]

    /// A driver's app on shift: a Supabase Realtime socket joined to `realtime:drivers` under the
    /// driver's id, tracking them as the simulator's drivers do.
    static func onShift(driverID: String, token: String, gateway: String) async throws -> RealtimeSocket {
        let socket = RealtimeSocket(url: gateway.replacingOccurrences(of: "http://", with: "ws://") + "/realtime/v1/websocket?apikey=anon&vsn=1.0.0")
        try await socket.send(
            try SupabaseRealtimeTests.join("realtime:drivers", ref: "1", token: token, config: ["presence": ["key": driverID]], version: "1.0.0")
        )
        try await socket.send(
            try SupabaseRealtimeTests.frame(
                join: "1",
                ref: "2",
                topic: "realtime:drivers",
                event: "presence",
                payload: ["type": "presence", "event": "track", "payload": ["driverId": driverID, "onShift": true]],
                version: "1.0.0"
            )
        )
        let tracked = try await socket.phoenix { $0["ref"] as? String == "2" }
        #expect(SupabaseRealtimeTests.status(tracked) == "ok", "the driver's track: \(tracked)")
        return socket
    }

    /// Debian's chromium, driven by Playwright for Python (`console_check.py`): an admin signs in,
    /// sees a username change on the Events page within 2 s, replays a dead letter and sees it leave
    /// the list, sets a role, watches a driver's marker move on the map, sees a push arrive on the
    /// Notifications page and reads a caught receipt on the Mail page; every page fits a
    /// phone's width and the browser's console stays free of errors. Screenshots of each page go
    /// to `.build/console-screenshots/`.
    @Test func anAdminWatchesEventsReplaysADeadLetterAndFollowsADriverInABrowser() async throws {
        try await WholeStackTurns.take {
            let stack = try await ProcessStack.start()
            defer { Task { await stack.stop() } }
            let api = GatewayAPI(base: stack.gateway.baseURL)
            let admin = try await api.account("admin", role: "admin")
            let outsider = try await api.account("outsider", role: "customer")
            let user = try await api.account("user", role: "customer")
            let driver = try await api.account("driver", role: "driver")
            _ = try await api.expect(200, .POST, "/v1/drivers/me/shift", token: driver.token, json: ["onShift": true])
            // The driver's app on shift, as the simulator's drivers are: present on the drivers'
            // channel under their id (the Deliveries page counts them and marks their marker).
            let shiftSocket = try await Self.onShift(driverID: driver.id, token: driver.token, gateway: stack.gateway.baseURL)

            // A dead letter of social.activity, as a consumer that gave up would park it.
            let kafka = try await TestKafka.shared.running()
            let event = OnboardingCompleted(userId: UUID(), completedAt: Date())
            let record = try EventEnvelope(event, source: "/splash/test").record(topic: TopicCatalog.socialActivity.name)
            let parked = try await Self.park(record, error: "the console test's poison", brokers: kafka.bootstrapServers)

            // A push and a mail for the user, as notify makes them from real events: their phone, an
            // edit ready (to the sink), and an order of theirs delivered (a receipt, caught).
            _ = try await api.expect(
                200,
                .PUT,
                "/v1/devices/\(String(repeating: "ab", count: 32))",
                token: user.token,
                json: ["platform": "ios", "topic": "fi.splash.SplashEdit"]
            )
            let customer = try #require(UUID(uuidString: user.id))
            let order = UUID()
            let parties = OrderParties(customerId: customer, restaurantId: UUID(), restaurantOwnerId: UUID(), driverId: nil)
            try await TestKafka.shared.publish(
                [
                    OrderPlaced(
                        orderId: order,
                        parties: parties,
                        items: [OrderItem(menuItemId: "m1", name: "Margherita", quantity: 2, unitPriceCents: 1290)],
                        totalCents: 2580,
                        dropoff: Dropoff(address: "Kaivokatu 1", lat: 60.171, lng: 24.941),
                        etaSeconds: 600,
                        placedAt: Date()
                    ),
                    OrderStatusChanged(
                        orderId: order,
                        parties: parties,
                        status: .delivered,
                        previousStatus: .arrivedAtDropoff,
                        by: OrderActor(userId: nil, role: .dispatch),
                        reason: nil,
                        version: 9,
                        changedAt: Date()
                    ),
                ],
                source: "/splash/tracking"
            )
            try await TestKafka.shared.publish(
                [
                    EditCompleted(
                        editId: UUID(),
                        userId: customer,
                        width: 800,
                        height: 600,
                        bytes: 1_000,
                        quality: 85,
                        format: .jpeg,
                        completedAt: Date()
                    )
                ],
                source: "/splash/edit-render"
            )

            // A deleted account: tracking and notify (running here) erase it, social's and
            // edit-render's acknowledgements are published by the test, and photo-catalog's, the
            // last, once the browser shows the first four (the script writes `signal`): it must
            // appear live.
            let gone = UUID()
            let signal = FileManager.default.temporaryDirectory.appendingPathComponent("console-signal-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: signal) }
            try await TestKafka.shared.publish([UserDeleted(userId: gone, deletedAt: Date())], source: "/splash/auth")
            try await TestKafka.shared.publish(
                [SocialUserErased(userId: gone, erasedAt: Date(), counts: ["likes": 2, "posts": 1, "collections": 0])],
                source: "/splash/social"
            )
            try await TestKafka.shared.publish(
                [RenderUserErased(userId: gone, erasedAt: Date(), counts: ["edits": 3])],
                source: "/splash/edit-render"
            )
            let third = Task {
                try await waitUntilReady("the browser showing the deletion", timeout: .seconds(120)) {
                    FileManager.default.fileExists(atPath: signal.path)
                }
                try await TestKafka.shared.publish(
                    [CatalogUserErased(userId: gone, erasedAt: Date(), counts: ["downloads": 1])],
                    source: "/splash/photo-catalog"
                )
            }
            defer { third.cancel() }

            let screenshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/console-screenshots")
                .standardized
            try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
            let settings: [String: Any] = [
                "base": stack.gateway.baseURL, "chromium": Self.chromium, "screenshots": screenshots.path,
                "admin": ["email": admin.email, "password": "correct horse 1"], "outsider": ["email": outsider.email, "password": "correct horse 1"],
                "user": ["id": user.id, "token": user.token], "driver": ["id": driver.id, "token": driver.token],
                "letter": ["deadLetterTopic": parked.topic, "partition": parked.partition, "offset": parked.offset],
                "deleted": ["id": gone.uuidString.lowercased(), "signal": signal.path],
            ]
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("console_check.py")
            let output = try await ProcessCommand(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", script.path],
                environment: [
                    "CONSOLE_CHECK": String(decoding: try JSONSerialization.data(withJSONObject: settings), as: UTF8.self)
                ]
            ).runToCompletion()
            await shiftSocket.disconnect()
            let findings = try #require(
                output.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] },
                "\(output)"
            )
            #expect(findings["passed"] as? Bool == true, "\(output)")
            // The deletions the console read: the account, when, and the five acknowledgements.
            let deletions = try await api.expect(200, .GET, "/console/api/deletions", token: admin.token)["deletions"] as? [[String: Any]]
            let shown = try #require(deletions?.first { $0["userId"] as? String == gone.uuidString.lowercased() })
            #expect(shown["complete"] as? Bool == true && shown["deletedAt"] is String, "\(shown)")
            let erasedBy = (shown["services"] as? [[String: Any]] ?? []).filter { $0["erasedAt"] != nil }.compactMap { $0["service"] as? String }
            #expect(erasedBy == ["social", "edit-render", "photo-catalog", "tracking", "notify"], "\(shown)")
            #expect((findings["eventSeconds"] as? Double ?? 99) <= 2, "\(findings)")

            // The replayed letter is on its topic again, once.
            let replayed = try await KafkaInspector(bootstrapServers: kafka.bootstrapServers, logger: Logger(label: "console-test"))
                .records(in: [TopicCatalog.socialActivity]).filter { $0.headers[text: "ce_id"] == record.headers[text: "ce_id"] }
            #expect(replayed.count == 1, "\(replayed.count) copies of the replayed event on social.activity")
            let roles = try await api.expect(200, .GET, "/auth/v1/admin/users?per_page=10", token: admin.token)["users"] as? [[String: Any]]
            #expect(
                roles?.first { $0["id"] as? String == user.id }.flatMap { ($0["app_metadata"] as? [String: Any])?["role"] as? String } == "driver"
            )
            await stack.stop()
        }
    }

    /// Admins only: anyone else's token is a 403 on every page, file and API; without one, pages
    /// send the browser to sign in and the API answers 401; changes must be JSON.
    @Test func everyConsoleURLIsForAdminsOnly() async throws {
        try await WholeStackTurns.take {
            let stack = try await ProcessStack.start()
            defer { Task { await stack.stop() } }
            let api = GatewayAPI(base: stack.gateway.baseURL)
            let admin = try await api.account("admin", role: "admin")
            let customer = try await api.account("customer", role: "customer")
            let client = HTTPClient.notFollowingRedirects
            func status(
                _ method: HTTPMethod,
                _ path: String,
                token: String?,
                body: String? = nil,
                type: String = "application/json"
            ) async throws -> (Int, HTTPHeaders) {
                var request = HTTPClientRequest(url: stack.gateway.baseURL + path)
                request.method = method
                if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                if let body {
                    request.headers.add(name: "Content-Type", value: type)
                    request.body = .bytes(ByteBuffer(string: body))
                }
                let response = try await client.execute(request, timeout: .seconds(30))
                // The event stream never ends by itself: its head is enough.
                if response.status != .ok || response.headers.first(name: "Content-Type") != "text/event-stream" {
                    _ = try await response.body.collect(upTo: 1 << 22)
                }
                return (Int(response.status.code), response.headers)
            }
            let changes: [(HTTPMethod, String, String)] = [
                (.POST, "/console/api/dead-letters/social.activity/replay", #"{"all":true}"#),
                (.PUT, "/console/api/users/\(customer.id)/role", #"{"role":"admin"}"#),
            ]
            for path in Self.pages {
                #expect(try await status(.GET, path, token: customer.token).0 == 403, "\(path)")
                let (signedOut, headers) = try await status(.GET, path, token: nil)
                #expect(signedOut == 303 && headers.first(name: "Location") == "/console/login", "\(path): \(signedOut)")
                #expect(try await status(.GET, path, token: admin.token).0 == 200, "\(path)")
            }
            for path in Self.reads {
                #expect(try await status(.GET, path, token: customer.token).0 == 403, "\(path)")
                #expect(try await status(.GET, path, token: nil).0 == 401, "\(path)")
            }
            for (method, path, body) in changes {
                #expect(try await status(method, path, token: customer.token, body: body).0 == 403, "\(path)")
                #expect(try await status(method, path, token: nil, body: body).0 == 401, "\(path)")
                // A form (what another site's page could send) is refused even with a session.
                #expect(
                    try await status(method, path, token: admin.token, body: "all=true", type: "application/x-www-form-urlencoded").0 == 415,
                    "\(path)"
                )
            }
            // The customer is still a customer; nothing was replayed.
            let users = try await api.expect(200, .GET, "/auth/v1/admin/users", token: admin.token)["users"] as? [[String: Any]]
            #expect(
                users?.first { $0["id"] as? String == customer.id }.flatMap { ($0["app_metadata"] as? [String: Any])?["role"] as? String }
                    == "customer"
            )
            // The admin channel is refused to anyone else on the apps' realtime endpoints too.
            #expect(try await status(.GET, "/v1/events?channels=admin", token: customer.token).0 == 403)
            #expect(try await status(.GET, "/console/login", token: nil).0 == 200)
            await stack.stop()
        }
    }

    /// Publishes `record` as a dead letter on its topic's `.dlq`, as a consumer that gave up would.
    static func park(_ record: KafkaRecord, error: String, brokers: String) async throws -> KafkaDeliveryReport {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(bootstrapServers: brokers, clientID: "console-test"),
            logger: Logger(label: "console-test")
        )
        return try await withRunningServices([producer]) {
            let original = KafkaMessage(
                topic: record.topic,
                partition: 0,
                offset: 7,
                key: record.key,
                value: record.value,
                headers: record.headers,
                timestamp: Date()
            )
            return try await producer.send(DeadLetter(original: original, error: error, attempts: 3).record)
        }
    }

    /// Debian's chromium (the Makefile installs it).
    static let chromium =
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/chromium"
}
