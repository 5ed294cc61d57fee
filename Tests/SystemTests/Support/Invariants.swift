import Contracts
import EventBus
import Foundation
import LocalStack
import PostgresNIO
import TestSupport
import Testing

/// What must hold in Postgres and on Kafka after a fault, read once the services' relays have
/// published what their outboxes hold. Each records its findings as the test's issues.
extension SystemStack {
    /// Every order answered 201 is in Postgres once; on Kafka each has one placement and one status
    /// change per move of its history, in order, none twice in effect (a redelivery repeats an
    /// event id); no event names an order Postgres does not have.
    /// The orders are read when they stand still: the same histories before and after Kafka is
    /// read (a dispatcher may still be assigning drivers).
    func checkOrders(placed: [String]) async throws {
        func readHistories() async throws -> [String: [String]] {
            try await database.withClient { client in
                var histories: [String: [String]] = [:]
                let rows = try await client.query(
                    """
                    SELECT id::text, (SELECT array_agg(h->>'status' ORDER BY n) FROM jsonb_array_elements(status_history) WITH ORDINALITY AS e(h, n))
                    FROM tracking.orders
                    """
                )
                for try await (id, statuses) in rows.decode((String, [String]).self) { histories[id] = statuses }
                return histories
            }
        }
        var histories: [String: [String]] = [:]
        var events: [EventEnvelope] = []
        for _ in 0..<10 {
            histories = try await readHistories()
            try await database.waitUntilOutboxIsPublished(schema: "tracking", timeout: .seconds(90))
            events = try await publishedEvents(on: TopicCatalog.trackingOrders.name, bootstrapServers: kafka.bootstrapServers)
            if try await readHistories() == histories { break }
        }
        #expect(Set(histories.keys) == Set(placed), "orders answered 201: \(placed.count), in Postgres: \(histories.count)")
        var placements: [String: Set<UUID>] = [:]
        var moves: [String: [(UUID, String)]] = [:]
        for event in events {
            switch event.type {
            case OrderPlaced.type:
                placements[event.key, default: []].insert(event.id)
            case OrderStatusChanged.type:
                if !(moves[event.key] ?? []).contains(where: { $0.0 == event.id }) {
                    moves[event.key, default: []].append((event.id, event.payload["status"] as? String ?? "?"))
                }
            default: break
            }
        }
        for (order, history) in histories {
            #expect(placements[order]?.count == 1, "order \(order): \(placements[order]?.count ?? 0) placements")
            #expect(
                moves[order]?.map(\.1) ?? [] == Array(history.dropFirst()),
                "order \(order): moves \(moves[order]?.map(\.1) ?? []), history \(history)"
            )
        }
        #expect(Set(placements.keys).union(moves.keys).isSubset(of: histories.keys), "events name orders Postgres does not have")
    }

    /// Every edit answered 201/202 is in edit-render's table, each edit there in one final state
    /// (completed, all of them: the sources are fixture photos) with one result in its outbox and
    /// in effect one on Kafka, one file per completed edit and none more, and social's record of
    /// each, applied once through its inbox. Waits for the edits to finish and social to catch up.
    func checkEdits(accepted: [String], blobs: URL) async throws {
        try await waitUntilReady("every edit finished", timeout: .seconds(120)) {
            (try? await database.count("render.edits", where: "status IN ('queued', 'rendering')")) == 0
        }
        try await database.waitUntilOutboxIsPublished(schema: "render", timeout: .seconds(60))
        let edits: [String: String] = try await database.withClient { client in
            var edits: [String: String] = [:]
            for try await (id, status) in try await client.query("SELECT id::text, status FROM render.edits").decode((String, String).self) {
                edits[id] = status
            }
            return edits
        }
        #expect(Set(accepted).isSubset(of: edits.keys), "\(Set(accepted).subtracting(edits.keys).count) accepted edits are missing")
        let unfinished = edits.filter { $0.value != "completed" }
        #expect(unfinished.isEmpty, "edits not completed: \(unfinished)")
        let outboxed: [String: Int] = try await database.withClient { client in
            var counts: [String: Int] = [:]
            let rows = try await client.query(
                "SELECT convert_from(payload, 'UTF8')::jsonb->>'editId', count(*)::int FROM render.outbox WHERE type IN ('render.edit.completed.v1', 'render.edit.failed.v1') GROUP BY 1"
            )
            for try await (edit, count) in rows.decode((String, Int).self) { counts[edit] = count }
            return counts
        }
        #expect(
            outboxed == edits.mapValues { _ in 1 },
            "result events per edit in the outbox: \(outboxed.filter { $0.value != 1 }), missing \(Set(edits.keys).subtracting(outboxed.keys).count)"
        )
        var results: [String: Set<UUID>] = [:]
        for event in try await publishedEvents(on: TopicCatalog.renderResults.name, bootstrapServers: kafka.bootstrapServers) {
            results[event.payload["editId"] as? String ?? "?", default: []].insert(event.id)
        }
        let notOnce = results.filter { $0.value.count != 1 }
        #expect(
            notOnce.isEmpty && Set(results.keys) == Set(edits.keys),
            "results on Kafka: \(notOnce.count) edits with more than one, \(Set(edits.keys).subtracting(results.keys).count) with none, \(Set(results.keys).subtracting(edits.keys).count) of no edit"
        )
        let files = try FileManager.default.subpathsOfDirectory(atPath: blobs.path).filter { $0.hasSuffix("edited.jpg") }
        #expect(files.count == edits.count, "\(files.count) files for \(edits.count) completed edits")
        try await waitUntilReady("social recording every edit", timeout: .seconds(60)) {
            (try? await database.count("social.edits")) == edits.count
        }
        #expect(try await database.count("social.inbox", where: "type = '\(EditCompleted.type)'") == edits.count)
    }

    /// Each photo's like count is the number of its likes; each like whose last toggle was answered
    /// is as it left it; on Kafka each person's likes and take-backs of a photo alternate (each
    /// toggle that changed something once, in order) and end as the table does.
    /// - Parameter erased: people whose accounts were deleted: their likes went with them, so the
    ///   events they toggled no longer end in the table's state.
    func checkLikes(known: [String: Bool?], erased: Set<String> = []) async throws {
        try await database.waitUntilOutboxIsPublished(schema: "social", timeout: .seconds(60))
        let (rows, counts): (Set<String>, [String: Int]) = try await database.withClient { client in
            var rows = Set<String>()
            for try await (user, photo) in try await client.query("SELECT user_id::text, photo_key FROM social.likes").decode((String, String).self) {
                rows.insert("\(user)|\(photo)")
            }
            var counts: [String: Int] = [:]
            for try await (photo, likes) in try await client.query("SELECT photo_key, likes::int FROM social.like_counts WHERE likes > 0").decode(
                (String, Int).self
            ) {
                counts[photo] = likes
            }
            return (rows, counts)
        }
        var perPhoto: [String: Int] = [:]
        for row in rows { perPhoto[String(row.split(separator: "|")[1]), default: 0] += 1 }
        #expect(counts == perPhoto, "like counts \(counts) against rows \(perPhoto)")
        for case let (key, liked?) in known {
            #expect(rows.contains(key) == liked, "\(key): the last answered toggle left it \(liked ? "liked" : "not liked")")
        }
        var toggles: [String: [(UUID, Bool)]] = [:]
        for event in try await publishedEvents(on: TopicCatalog.socialActivity.name, bootstrapServers: kafka.bootstrapServers)
        where event.type == PhotoLiked.type || event.type == PhotoUnliked.type {
            let key = "\(event.key)|\(event.payload["photoId"] as? String ?? "?")"
            if !(toggles[key] ?? []).contains(where: { $0.0 == event.id }) {
                toggles[key, default: []].append((event.id, event.type == PhotoLiked.type))
            }
        }
        for (key, sequence) in toggles where !erased.contains(String(key.split(separator: "|")[0])) {
            let states = sequence.map(\.1)
            #expect(zip(states, states.dropFirst()).allSatisfy { $0 != $1 } && states.first == true, "\(key): toggles \(states)")
            #expect(
                states.last == rows.contains(key),
                "\(key): the events end \(states.last == true ? "liked" : "not liked"), the table says otherwise"
            )
        }
    }

    /// Every post answered 201 is in social's table once, and each post there has its one
    /// `social.post.created.v1` in effect on Kafka; none names a post that does not exist.
    func checkPosts(accepted: [String]) async throws {
        try await database.waitUntilOutboxIsPublished(schema: "social", timeout: .seconds(60))
        let posts: Set<String> = try await database.withClient { client in
            var posts = Set<String>()
            for try await id in try await client.query("SELECT id::text FROM social.posts").decode(String.self) { posts.insert(id) }
            return posts
        }
        #expect(Set(accepted).isSubset(of: posts), "\(Set(accepted).subtracting(posts).count) posts answered 201 are missing")
        var created: [String: Set<UUID>] = [:]
        for event in try await publishedEvents(on: TopicCatalog.socialActivity.name, bootstrapServers: kafka.bootstrapServers)
        where event.type == PostCreated.type {
            created[event.payload["postId"] as? String ?? "?", default: []].insert(event.id)
        }
        #expect(Set(created.keys) == posts, "posts with a created event: \(created.count), in the table: \(posts.count)")
        #expect(created.values.allSatisfy { $0.count == 1 }, "posts created more than once in effect: \(created.filter { $0.value.count > 1 }.count)")
    }
}

extension EventEnvelope {
    /// The JSON payload as an object (empty when it is not one).
    var payload: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(data))) as? [String: Any] ?? [:]
    }
}
