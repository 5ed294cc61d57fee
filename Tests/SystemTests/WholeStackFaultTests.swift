import AsyncHTTPClient
import Contracts
import Foundation
import LocalStack
import TestSupport
import Testing

extension FaultTests {
    /// All of Splash under a mixed load through the gateway, as the three apps make it (sign-ins
    /// and refreshes, browsing and search, previews and edits, likes, posts, the feed, orders moved by a kitchen and delivered
    /// by simulated drivers, a person following their own events live), while every broker is
    /// down for 10 s, then Postgres restarts, then edit-render is SIGKILLed mid-work and started
    /// again. The clients retry what got no answer or a
    /// 502/503/504, writes under their `Idempotency-Key`. No answer is a 500; every retried write is
    /// made in the end; and afterwards, in Postgres and on Kafka, nothing was lost or done twice:
    /// accounts (`checkNothingLostOrDoubled`), edits (one final state, one result, one file, one
    /// record in social), likes (counts equal to rows, events alternating to the table's state),
    /// posts, orders (every move once, in order), social's profiles (auth's accounts) and the live
    /// stream (each of the person's finished edits once).
    @Test func theWholeStackUnderAMixedLoadLosesAndDoublesNothingWhileTheBrokersPostgresAndARenderWorkerFail() async throws {
        let stack = try await SystemStack.start(authSettings: WholeStack.deadline)
        defer { Task { await stack.stop() } }
        let whole = try await WholeStack.start(on: stack)
        defer { Task { await whole.stop() } }
        let workload = MixedWorkload(gateway: whole.gateway.baseURL)
        var people: [MixedWorkload.Person] = []
        for index in 0..<6 { people.append(try #require(await workload.signUp("mix\(index)"))) }
        let photos = ["mate-aqua-01", "mate-blinds-02", "mate-dune-03", "mate-freshflower-04", "mate-garden-05"]
        let watcher = EventStreamClient(url: "\(whole.gateway.baseURL)/v1/events?channels=me", token: people[0].token)
        #expect(try await watcher.waitForStatus() == 200)

        let faults = Task {
            try await Task.sleep(for: .seconds(5))
            try stack.kafka.setAllBrokers(down: true)
            try await Task.sleep(for: .seconds(10))
            try stack.kafka.setAllBrokers(down: false)
            try await Task.sleep(for: .seconds(5))
            try await stack.postgres.restart(downFor: .seconds(2))
            try await Task.sleep(for: .seconds(4))
            try await whole.killAndRestartRender()
        }
        await workload.run(for: .seconds(40), people: people, photos: photos, restaurant: whole.restaurant, kitchen: whole.kitchen.token)
        try await faults.value
        let outcome = workload.result
        let table = outcome.answers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.sorted { $0.key < $1.key })" }.joined(separator: "\n")
        print(
            "mixed load, final answers by endpoint and status:\n\(table)\nanswers that were retried, by status: \(outcome.retried.sorted { $0.key < $1.key })"
        )
        // The brokers' outage was felt: writes were taken while their events had to wait.
        var held = 0
        for schema in ["auth", "render", "social", "tracking"] {
            held += try await stack.database.count("\(schema).outbox", where: "published_at - created_at > interval '5 seconds'")
        }
        #expect(held > 0, "no event waited in an outbox through the brokers' outage")

        // No answer a client must never get; every write the apps retried was made.
        #expect(outcome.brokenAnswers.isEmpty, "\(outcome.brokenAnswers)")
        for endpoint in [
            "POST /v1/edits", "POST /v1/edits/preview", "POST /v1/posts", "POST /v1/orders", "PUT /v1/likes/{photoKey}",
            "DELETE /v1/likes/{photoKey}",
            "POST /auth/v1/token?grant_type=password",
        ] {
            #expect(outcome.count(endpoint) { !(200..<300).contains($0) } == 0, "\(endpoint): \(outcome.answers[endpoint] ?? [:])")
        }
        #expect(outcome.failedMoves.isEmpty, "\(outcome.failedMoves)")
        // Sign-ups are not retried (a second try is another sign-up): refused only while Postgres was away.
        let signUps = outcome.answers["POST /auth/v1/signup"] ?? [:]
        #expect(Set(signUps.keys).isSubset(of: [200, 503]), "\(signUps)")
        #expect(
            outcome.edits.count >= 20 && outcome.posts.count >= 10 && outcome.orders.count >= 8 && outcome.accounts.count >= 12,
            "too little was done to show anything: \(outcome.edits.count) edits, \(outcome.posts.count) posts, \(outcome.orders.count) orders, \(outcome.accounts.count) accounts"
        )

        // The drivers stop, so the orders come to rest.
        whole.simulator.stop()
        do {
            try await checkNothingLostOrDoubled(stack, made: outcome.accounts)
            try await stack.checkEdits(accepted: Array(outcome.edits.keys), blobs: whole.blobs)
            try await stack.checkLikes(known: outcome.likes)
            try await stack.checkPosts(accepted: outcome.posts)
            try await stack.checkOrders(placed: outcome.orders)
        } catch {
            for schema in ["auth", "render", "social", "tracking"] {
                print(
                    "\(schema) outbox unpublished: \(try await stack.database.count("\(schema).outbox", where: "published_at IS NULL AND failed_at IS NULL"))"
                )
            }
            for process in [stack.auth, whole.render, whole.social, whole.tracking] {
                print("\(process.name)'s log, its end:\n\(process.output.text.split(separator: "\n").suffix(40).joined(separator: "\n"))")
                let metrics = (try? await jsonText(process.baseURL + "/metrics")) ?? ""
                print(
                    "\(process.name)'s metrics:\n\(metrics.split(separator: "\n").filter { $0.contains("kafka_client_queued") || $0.contains("kafka_producer_records") || $0.contains("outbox_") }.joined(separator: "\n"))"
                )
            }
            let activity = try await stack.database.withClient { client in
                try await client.query(
                    "SELECT usename::text, state::text, left(query, 120), (now() - xact_start)::text FROM pg_stat_activity WHERE backend_type = 'client backend' AND state <> 'idle'"
                ).collect().map { try $0.decode((String?, String?, String?, String?).self) }
            }
            print("Postgres sessions: \(activity)")
            throw error
        }
        // social's projections came through both faults: its profiles are auth's accounts.
        let accounts = try await stack.accountIDs()
        try await waitUntilReady("social holding every account", timeout: .seconds(60)) {
            (try? await stack.database.count("social.profiles")) == accounts.count
        }
        #expect(try await stack.database.count("social.inbox", where: "type = '\(UserRegistered.type)'") == accounts.count)
        // The live stream: each of the first person's finished edits once, none missed.
        let own = Set(outcome.edits.filter { $0.value == people[0].id }.keys)
        #expect(!own.isEmpty)
        let finished: @Sendable () -> [String] = {
            watcher.events.filter { $0.event == EditCompleted.type }.compactMap { event in
                ((try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any])
                    .flatMap { $0["data"] as? [String: Any] }?["editId"] as? String
            }
        }
        try? await waitUntilReady("the person's stream showing each finished edit", timeout: .seconds(30)) { own.isSubset(of: finished()) }
        let streamed = finished()
        #expect(Set(streamed) == own, "streamed \(Set(streamed).count) of \(own.count) finished edits")
        #expect(streamed.count == Set(streamed).count, "an edit streamed twice")
        await watcher.stop()
        await whole.stop()
        await stack.stop()
    }
}

/// The body of a GET as text.
private func jsonText(_ url: String) async throws -> String {
    let response = try await HTTPClient.shared.get(url: url).get()
    return response.body.map { String(buffer: $0) } ?? ""
}
