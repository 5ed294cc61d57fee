import AsyncHTTPClient
import Contracts
import EventBus
import Foundation
import LocalStack
import NIOCore
import NIOHTTP1
import Synchronization
import TestSupport
import Testing

extension FaultTests {
    /// Two people with likes, a collection, posts (one of a photo they uploaded), edits with
    /// rendered files, orders and a registered phone delete their accounts while four others keep
    /// all of Splash busy, and notify is down for part of it (killed as the deletions go out,
    /// started again 5 s later). Each of the four running services acknowledges its erasure within
    /// 5 s of the deletion, notify within 5 s of getting its partitions back; then the erasure checker finds nothing
    /// of them in any schema or blob folder (while it finds the others), their old tokens are
    /// refused on every route, and the others' likes, counts and posts are intact.
    @Test func peopleWhoDeleteTheirAccountsUnderLoadLeaveNothingInAnyService() async throws {
        let stack = try await SystemStack.start(authSettings: WholeStack.deadline)
        defer { Task { await stack.stop() } }
        let whole = try await WholeStack.start(on: stack, notify: true)
        defer { Task { await whole.stop() } }
        let gateway = whole.gateway.baseURL
        let photos = ["mate-aqua-01", "mate-blinds-02", "mate-dune-03", "mate-freshflower-04", "mate-garden-05"]
        let staying = MixedWorkload(gateway: gateway)
        let leaving = MixedWorkload(gateway: gateway)
        var stayers: [MixedWorkload.Person] = []
        for index in 0..<4 { stayers.append(try #require(await staying.signUp("stay\(index)"))) }
        var leavers: [MixedWorkload.Person] = []
        for index in 0..<2 { leavers.append(try #require(await leaving.signUp("leave\(index)"))) }
        let jpeg = try await fixturePhoto(from: whole.catalog.baseURL)
        for (index, person) in leavers.enumerated() {
            let device = String(repeating: "\(index + 1)f", count: 32)
            let registered = try await call(
                .PUT,
                "\(gateway)/v1/devices/\(device)",
                token: person.token,
                json: #"{"platform":"ios","topic":"fi.splash.TrackBite","environment":"sandbox","locale":"fi-FI"}"#
            )
            #expect(registered.status == 200, "\(registered.body)")
            let collection = try await call(.POST, "\(gateway)/v1/collections", token: person.token, json: #"{"title":"Mine","private":false}"#)
            #expect(collection.status == 201, "\(collection.body)")
            let object = "posts/\(person.id)/sand.jpg"
            let uploaded = try await call(.POST, "\(gateway)/storage/v1/object/\(object)", token: person.token, bytes: jpeg, type: "image/jpeg")
            #expect(uploaded.status == 200, "\(uploaded.body)")
            let posted = try await call(
                .POST,
                "\(gateway)/v1/posts",
                token: person.token,
                json: #"{"photo":{"objectKey":"\#(object)"},"caption":"Sand"}"#,
                headers: [("Idempotency-Key", UUID().uuidString)]
            )
            #expect(posted.status == 201, "\(posted.body)")
        }

        let others = stayers
        let load = Task {
            await staying.run(for: .seconds(25), people: others, photos: photos, restaurant: whole.restaurant, kitchen: whole.kitchen.token)
        }
        // The leavers use the apps for a while (edits, likes, posts, orders the kitchen readies),
        // then delete their accounts while the others carry on and notify is down.
        await leaving.run(for: .seconds(12), people: leavers, photos: photos, restaurant: whole.restaurant, kitchen: whole.kitchen.token)
        let done = leaving.result
        #expect(
            done.edits.count >= 2 && done.orders.count >= 2 && done.posts.count >= 2,
            "the leavers did too little: \(done.edits.count) edits, \(done.orders.count) orders, \(done.posts.count) posts"
        )
        let outage = Task { try await whole.killAndRestartNotify(after: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(300))
        for person in leavers {
            let deleted = try await call(.DELETE, "\(gateway)/auth/v1/user", token: person.token, json: #"{"password":"a long password 1"}"#)
            #expect(deleted.status == 204, "\(deleted.body)")
        }
        try await outage.value
        let notifyBack = Date()
        await load.value
        #expect(staying.result.brokenAnswers.isEmpty, "\(staying.result.brokenAnswers)")

        // Each service acknowledges each deletion: within 5 s of it, notify within 5 s of its return.
        let ids = Set(leavers.map { $0.id.lowercased() })
        let deletions = try await publishedEvents(on: TopicCatalog.authUsers.name, bootstrapServers: stack.kafka.bootstrapServers)
            .filter { $0.type == UserDeleted.type && ids.contains($0.key) }
            .map { try EventJSON.decoder.decode(UserDeleted.self, from: Data($0.data)) }
        #expect(deletions.count == 2)
        let topics = Erasures.services.map(\.topic.name)
        let latest = Mutex<[(topic: String, user: String, erasedAt: Date, deletedAt: Date)]>([])
        try await waitUntilReady("five acknowledgements of each deletion", timeout: .seconds(60)) {
            var found: [(String, String, Date, Date)] = []
            for topic in topics {
                for event in (try? await publishedEvents(on: topic, bootstrapServers: stack.kafka.bootstrapServers)) ?? []
                where ids.contains(event.key) {
                    guard let body = try? JSONSerialization.jsonObject(with: Data(event.data)) as? [String: Any],
                        let erasedAt = (body["erasedAt"] as? String).flatMap(EventJSON.parseTimestamp),
                        let deletion = deletions.first(where: { $0.userId.uuidString.lowercased() == event.key })
                    else { continue }
                    found.append((topic, event.key, erasedAt, deletion.deletedAt))
                }
            }
            latest.withLock { $0 = found }
            return Set(found.map { "\($0.0) \($0.1)" }).count == topics.count * ids.count
        }
        let acknowledged = latest.withLock { $0 }
        let running = acknowledged.filter { $0.topic != TopicCatalog.notifyErasures.name }.map { $0.erasedAt.timeIntervalSince($0.deletedAt) }
            .sorted()
        let afterReturn = acknowledged.filter { $0.topic == TopicCatalog.notifyErasures.name }.map { $0.erasedAt.timeIntervalSince(notifyBack) }
        print(
            "erasure after deletion under load: \(running.count) acknowledgements of the running services, "
                + "median \(String(format: "%.2f", running[running.count / 2])) s, max \(String(format: "%.2f", running.last ?? 0)) s; "
                + "notify's after its return: \(afterReturn.map { String(format: "%.2f", $0) }) s"
        )
        #expect((running.last ?? .infinity) <= 5, "an erasure took longer than 5 s: \(acknowledged)")
        // The killed member's partitions come to the new one once the group gives up on it
        // (KAFKA_SESSION_TIMEOUT, 6 s here).
        #expect(afterReturn.allSatisfy { $0 <= 6 + 5 }, "notify's erasures after its return: \(afterReturn)")

        // Their old tokens are refused on every route.
        for person in leavers {
            // auth answers as GoTrue does for a session that is gone: 403 session_not_found.
            let own = try await call(.GET, gateway + "/auth/v1/user", token: person.token)
            #expect(own.status == 403 && own.body.contains("session_not_found"), "\(own)")
            for path in ["/v1/likes", "/v1/edits", "/v1/orders", "/v1/devices", "/v1/collections", "/storage/v1/bucket"] {
                let status = try await call(.GET, gateway + path, token: person.token).status
                #expect(status == 401, "\(path) answered \(status) to a deleted account's token")
            }
        }

        // Nothing of the leavers is left; the stayers' data is all there.
        whole.simulator.stop()
        let folders = [whole.blobs, whole.socialBlobs]
        for person in leavers {
            let left = try await stack.database.erasureFindings(of: try #require(UUID(uuidString: person.id)), blobFolders: folders)
            #expect(left.isEmpty, "left of \(person.id): \(left)")
        }
        let stayer = try await stack.database.erasureFindings(of: try #require(UUID(uuidString: stayers[0].id)), blobFolders: folders)
        let schemas = Set(stayer.map { $0.place.split(separator: ".").first.map(String.init) ?? "" })
        #expect(schemas.isSuperset(of: ["auth", "social", "render", "tracking"]), "\(stayer)")
        try await stack.checkLikes(known: staying.result.likes, erased: ids)
        let posts = staying.result.posts.map { "'\($0)'" }.joined(separator: ",")
        #expect(try await stack.database.count("social.posts", where: "id IN (\(posts.isEmpty ? "NULL" : posts))") == staying.result.posts.count)
        await whole.stop()
        await stack.stop()
    }
}

/// A fixture photo's bytes, as the catalog serves them.
private func fixturePhoto(from catalog: String) async throws -> [UInt8] {
    let photo = try await call(.GET, "\(catalog)/v1/photos/mate-aqua-01", token: nil)
    let body = try JSONSerialization.jsonObject(with: Data(photo.body.utf8)) as? [String: Any]
    let url = try #require((body?["urls"] as? [String: Any])?["regular"] as? String)
    let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
    return Array(buffer: try await response.body.collect(upTo: 10 << 20))
}

/// One call, with a bearer token and a JSON (or other) body when given: the status and the body as text.
private func call(
    _ method: HTTPMethod,
    _ url: String,
    token: String?,
    json: String? = nil,
    bytes: [UInt8]? = nil,
    type: String = "application/json",
    headers: [(String, String)] = []
) async throws -> (status: Int, body: String) {
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
    if let body = json.map({ Array($0.utf8) }) ?? bytes {
        request.headers.add(name: "Content-Type", value: type)
        request.body = .bytes(ByteBuffer(bytes: body))
    }
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 1 << 20)
    return (Int(response.status.code), String(buffer: body))
}
