import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import Identity
import Kafka
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import RoadNetwork
import ServiceKit

/// What the console's pages show, fetched where it lives: offsets and dead letters from Kafka,
/// users from auth's admin API, restaurants from tracking, pushes and caught mail from notify,
/// roads from the fixture. Calls to the
/// services carry the admin's own token, so each service decides as it would for them.
struct ConsoleBackends: Sendable {
    let client: HTTPClient
    let authURL: URL
    let trackingURL: URL?
    let editRenderURL: URL?
    let notifyURL: URL?
    let brokers: String
    /// The deletions this replica read in the last hour (`DeletedUsersFeed`): when each was made.
    let deletedUsers: DeletedUsers
    let logger: Logger

    /// A service's answer passed on as it came (status and JSON body).
    struct Passed: Sendable {
        var status: Int
        var body: ByteBuffer
        var headers: HTTPHeaders = [:]
    }

    // MARK: auth

    /// Signs in with a password at auth: the session's JSON, or auth's error.
    func signIn(email: String, password: String, clientAddress: String) async throws -> (status: Int, json: [String: Any]) {
        let answer = try await call(
            .POST,
            authURL,
            "auth/v1/token",
            query: "grant_type=password",
            token: nil,
            json: try JSONSerialization.data(withJSONObject: ["email": email, "password": password]),
            headers: [("X-Forwarded-For", clientAddress)]
        )
        return (answer.status, (try? JSONSerialization.jsonObject(with: Data(buffer: answer.body))) as? [String: Any] ?? [:])
    }

    /// The newest 50 users from auth's admin list and how many there are, as
    /// `{"total":…,"users":[…]}`; auth's refusal as it came.
    func users(token: String) async throws -> Passed {
        let answer = try await call(.GET, authURL, "auth/v1/admin/users", query: "per_page=50", token: token)
        guard answer.status == 200 else { return answer }
        let json = (try? JSONSerialization.jsonObject(with: Data(buffer: answer.body))) as? [String: Any] ?? [:]
        let total = answer.headers.first(name: "X-Total-Count").flatMap(Int.init) ?? 0
        return Passed(
            status: 200,
            body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["total": total, "users": json["users"] ?? []]))
        )
    }

    func setRole(_ role: String, of user: UUID, token: String) async throws -> Passed {
        try await call(
            .PUT,
            authURL,
            "auth/v1/admin/users/\(user.lowercased)/role",
            token: token,
            json: try JSONSerialization.data(withJSONObject: ["role": role])
        )
    }

    // MARK: tracking

    /// Every restaurant tracking has (following its cursor, at most 1,000), as
    /// `{"items":[…]}`; an empty list when tracking is not configured.
    func restaurants(token: String) async throws -> Passed {
        guard let trackingURL else { return Passed(status: 200, body: ByteBuffer(string: #"{"items":[]}"#)) }
        var items: [Any] = []
        var cursor: String?
        for _ in 0..<10 {
            let page = try await call(.GET, trackingURL, "v1/restaurants", query: "limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
            guard page.status == 200 else { return page }
            let json = (try? JSONSerialization.jsonObject(with: Data(buffer: page.body))) as? [String: Any] ?? [:]
            items += json["items"] as? [Any] ?? []
            cursor = (json["nextCursor"] as? String).flatMap { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) }
            if cursor == nil { break }
        }
        return Passed(status: 200, body: ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["items": items])))
    }

    /// One order as tracking shows it to an admin.
    func order(_ id: UUID, token: String) async throws -> Passed {
        guard let trackingURL else { throw Problem(status: .notFound, detail: "tracking is not configured.") }
        return try await call(.GET, trackingURL, "v1/orders/\(id.lowercased)", token: token)
    }

    private func call(
        _ method: HTTPMethod,
        _ base: URL,
        _ path: String,
        query: String? = nil,
        token: String?,
        json: Data? = nil,
        headers: [(String, String)] = []
    ) async throws -> Passed {
        var request = HTTPClientRequest(url: base.appendingPathComponent(path).absoluteString + (query.map { "?\($0)" } ?? ""))
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(json)
        }
        let response = try await client.execute(request, timeout: .seconds(10))
        return Passed(status: Int(response.status.code), body: try await response.body.collect(upTo: 8 << 20), headers: response.headers)
    }

    // MARK: notify

    /// notify's delivery log, newest first, as `{"items":[…]}`; empty when notify is not configured.
    func notifications(token: String) async throws -> Passed {
        guard let notifyURL else { return Passed(status: 200, body: ByteBuffer(string: #"{"items":[]}"#)) }
        return try await call(.GET, notifyURL, "v1/admin/notifications", query: "limit=100", token: token)
    }

    /// The mail the catchers of auth (codes and links) and notify (receipts) kept, newest first, as
    /// `{"items":[…]}`: the 50 newest of both. A refusal (not an admin) is passed on as it came.
    func caughtMail(token: String) async throws -> Passed {
        let fromAuth = try await call(.GET, authURL, "auth/v1/admin/mail", query: "limit=50", token: token)
        guard fromAuth.status == 200 else { return fromAuth }
        var items = Self.items(fromAuth)
        if let notifyURL {
            let fromNotify = try await call(.GET, notifyURL, "v1/admin/mail", query: "limit=50", token: token)
            guard fromNotify.status == 200 else { return fromNotify }
            items += Self.items(fromNotify)
        }
        // Both write createdAt as RFC 3339 in UTC: in that form, text order is time order.
        items.sort { ($0["createdAt"] as? String ?? "") > ($1["createdAt"] as? String ?? "") }
        let body = try JSONSerialization.data(withJSONObject: ["items": Array(items.prefix(50))])
        return Passed(status: 200, body: ByteBuffer(bytes: body))
    }

    private static func items(_ answer: Passed) -> [[String: Any]] {
        ((try? JSONSerialization.jsonObject(with: Data(buffer: answer.body))) as? [String: Any])?["items"] as? [[String: Any]] ?? []
    }

    // MARK: edit-render

    /// The render workers and the partitions each holds (edit-render's `GET /v1/workers`); none
    /// when edit-render is not configured or does not answer.
    func renderWorkers(token: String) async -> [Any] {
        guard let editRenderURL, let answer = try? await call(.GET, editRenderURL, "v1/workers", token: token), answer.status == 200 else {
            return []
        }
        return ((try? JSONSerialization.jsonObject(with: Data(buffer: answer.body))) as? [String: Any])?["workers"] as? [Any] ?? []
    }

    // MARK: Kafka

    /// Each catalogued consumer group's position and lag in every partition it reads.
    func consumers() async throws -> [[String: Any]] {
        let inspector = KafkaInspector(bootstrapServers: brokers, timeout: .seconds(5), logger: logger)
        var groups: [[String: Any]] = []
        for group in ConsumerGroupCatalog.all {
            let offsets = try await inspector.offsets(of: group.topics, group: group.name)
            groups.append([
                "group": group.name, "service": group.service, "lag": offsets.reduce(0) { $0 + $1.lag },
                "partitions": offsets.map { offset -> [String: Any] in
                    [
                        "topic": offset.topic, "partition": offset.partition, "committed": offset.committed.map { $0 as Any } ?? NSNull(),
                        "end": offset.high, "lag": offset.lag,
                    ]
                },
            ])
        }
        return groups
    }

    var deadLetters: DeadLetterOffice { DeadLetterOffice(bootstrapServers: brokers, logger: logger) }

    /// The dead letters of every event topic waiting to be replayed, and how many were.
    func waitingLetters() async throws -> [[String: Any]] {
        var topics: [[String: Any]] = []
        for topic in TopicCatalog.eventTopics {
            let entries = try await deadLetters.letters(of: topic.deadLetter)
            topics.append([
                "topic": topic.name, "deadLetterTopic": topic.deadLetter.name,
                "replayed": entries.filter(\.replayed).count,
                "letters": entries.filter { !$0.replayed }.map { entry -> [String: Any] in
                    let original = entry.letter.original
                    return [
                        "partition": entry.partition, "offset": entry.offset,
                        "parkedAt": entry.parkedAt.map { EventJSON.formatTimestamp($0) as Any } ?? NSNull(),
                        "type": original.headers[text: "ce_type"] ?? NSNull(), "key": original.keyText ?? NSNull(),
                        "error": entry.letter.error, "attempts": entry.letter.attempts,
                        "from": "\(original.topic)[\(original.partition)]@\(original.offset)",
                        "event": String(decoding: original.value.prefix(4_000), as: UTF8.self),
                    ]
                },
            ])
        }
        return topics
    }

    /// Each deleted account the services acknowledged erasing (their `*.user.erased.v1`, kept 30
    /// days), newest first, at most `limit`: when it was deleted (known for the last hour), and
    /// what each service removed and when. A deletion is complete when all five acknowledged it.
    func deletions(limit: Int = 100) async throws -> [[String: Any]] {
        let inspector = KafkaInspector(bootstrapServers: brokers, timeout: .seconds(5), logger: logger)
        let records = try await inspector.records(in: Erasures.services.map(\.topic))
        var byUser: [UUID: [String: (erasedAt: Date, counts: [String: Int])]] = [:]
        for record in records {
            guard let service = Erasures.services.first(where: { $0.topic.name == record.topic })?.name,
                let envelope = try? EventEnvelope(record),
                let body = try? JSONSerialization.jsonObject(with: Data(envelope.data)) as? [String: Any],
                let user = (body["userId"] as? String).flatMap(UUID.init(uuidString:)),
                let erasedAt = (body["erasedAt"] as? String).flatMap(EventJSON.parseTimestamp)
            else { continue }
            // Every replica of a service acknowledges once per deletion: the first counts.
            if let seen = byUser[user]?[service], seen.erasedAt <= erasedAt { continue }
            byUser[user, default: [:]][service] = (erasedAt, body["counts"] as? [String: Int] ?? [:])
        }
        let newestFirst = byUser.sorted {
            ($0.value.values.map(\.erasedAt).max() ?? .distantPast) > ($1.value.values.map(\.erasedAt).max() ?? .distantPast)
        }
        return newestFirst.prefix(limit).map { user, services in
            let deletedAt = deletedUsers.deletedAt(user)
            return [
                "userId": user.lowercased,
                "deletedAt": deletedAt.map { EventJSON.formatTimestamp($0) as Any } ?? NSNull(),
                "complete": services.count == Erasures.services.count,
                "services": Erasures.services.map { service, _ -> [String: Any] in
                    guard let erased = services[service] else { return ["service": service] }
                    var entry: [String: Any] = ["service": service, "erasedAt": EventJSON.formatTimestamp(erased.erasedAt), "counts": erased.counts]
                    if let deletedAt { entry["seconds"] = (erased.erasedAt.timeIntervalSince(deletedAt) * 1_000).rounded() / 1_000 }
                    return entry
                },
            ]
        }
    }

    /// The road graph as the fixture has it (nodes, edges, restaurants, attribution).
    static let roads: ByteBuffer? = (try? RoadGraph.helsinkiFixture()).flatMap { try? Data(contentsOf: $0) }.map { ByteBuffer(data: $0) }
}
