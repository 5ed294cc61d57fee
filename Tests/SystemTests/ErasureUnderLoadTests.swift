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
    /// Two people who edited, liked, posted, ordered and registered a phone delete their accounts
    /// while four others keep all of Splash busy. Each of the five services that kept anything of
    /// them acknowledges its erasure within 5 s of the deletion, and then the erasure checker finds
    /// nothing of them in any schema or blob folder — while it still finds the others.
    @Test func peopleWhoDeleteTheirAccountsUnderLoadLeaveNothingInAnyService() async throws {
        let stack = try await SystemStack.start(authSettings: WholeStack.deadline)
        defer { Task { await stack.stop() } }
        let whole = try await WholeStack.start(on: stack, notify: true)
        defer { Task { await whole.stop() } }
        let photos = ["mate-aqua-01", "mate-blinds-02", "mate-dune-03", "mate-freshflower-04", "mate-garden-05"]
        let staying = MixedWorkload(gateway: whole.gateway.baseURL)
        let leaving = MixedWorkload(gateway: whole.gateway.baseURL)
        var stayers: [MixedWorkload.Person] = []
        for index in 0..<4 { stayers.append(try #require(await staying.signUp("stay\(index)"))) }
        var leavers: [MixedWorkload.Person] = []
        for index in 0..<2 { leavers.append(try #require(await leaving.signUp("leave\(index)"))) }
        for (index, person) in leavers.enumerated() {
            let device = String(repeating: "\(index + 1)f", count: 32)
            let registered = try await call(
                .PUT,
                "\(whole.gateway.baseURL)/v1/devices/\(device)",
                token: person.token,
                json: #"{"platform":"ios","topic":"fi.splash.TrackBite","environment":"sandbox","locale":"fi-FI"}"#
            )
            #expect(registered.status == 200, "\(registered.body)")
        }

        let others = stayers
        let load = Task {
            await staying.run(for: .seconds(35), people: others, photos: photos, restaurant: whole.restaurant, kitchen: whole.kitchen.token)
        }
        // The leavers use the apps for a while (edits, likes, posts, orders the kitchen readies),
        // then delete their accounts while the others carry on.
        await leaving.run(for: .seconds(12), people: leavers, photos: photos, restaurant: whole.restaurant, kitchen: whole.kitchen.token)
        let done = leaving.result
        #expect(done.edits.count >= 2 && done.orders.count >= 2, "the leavers did too little: \(done.edits.count) edits, \(done.orders.count) orders")
        for person in leavers {
            let deleted = try await call(
                .DELETE,
                "\(whole.gateway.baseURL)/auth/v1/user",
                token: person.token,
                json: #"{"password":"a long password 1"}"#
            )
            #expect(deleted.status == 204, "\(deleted.body)")
        }
        await load.value
        #expect(staying.result.brokenAnswers.isEmpty, "\(staying.result.brokenAnswers)")

        // Each service acknowledges each deletion, within 5 s of it.
        let ids = Set(leavers.map { $0.id.lowercased() })
        let deletions = try await publishedEvents(on: TopicCatalog.authUsers.name, bootstrapServers: stack.kafka.bootstrapServers)
            .filter { $0.type == UserDeleted.type && ids.contains($0.key) }
            .map { try EventJSON.decoder.decode(UserDeleted.self, from: Data($0.data)) }
        #expect(deletions.count == 2)
        let topics = [
            TopicCatalog.socialErasures, TopicCatalog.renderErasures, TopicCatalog.catalogErasures, TopicCatalog.trackingErasures,
            TopicCatalog.notifyErasures,
        ].map(\.name)
        let latest = Mutex<[(service: String, user: String, seconds: Double)]>([])
        try await waitUntilReady("five acknowledgements of each deletion", timeout: .seconds(60)) {
            var found: [(String, String, Double)] = []
            for topic in topics {
                let events = (try? await publishedEvents(on: topic, bootstrapServers: stack.kafka.bootstrapServers)) ?? []
                for event in events where ids.contains(event.key) {
                    guard let body = try? JSONSerialization.jsonObject(with: Data(event.data)) as? [String: Any],
                        let erasedAt = (body["erasedAt"] as? String).flatMap(EventJSON.parseTimestamp),
                        let deletion = deletions.first(where: { $0.userId.uuidString.lowercased() == event.key })
                    else { continue }
                    found.append((topic, event.key, erasedAt.timeIntervalSince(deletion.deletedAt)))
                }
            }
            latest.withLock { $0 = found }
            return Set(found.map { "\($0.0) \($0.1)" }).count == topics.count * ids.count
        }
        let acknowledged = latest.withLock { $0 }
        let seconds = acknowledged.map(\.seconds).sorted()
        print(
            "erasure after deletion, \(seconds.count) acknowledgements: median \(String(format: "%.2f", seconds[seconds.count / 2])) s, max \(String(format: "%.2f", seconds.last ?? 0)) s; "
                + acknowledged.map { "\($0.service) \(String(format: "%.2f", $0.seconds))" }.joined(separator: ", ")
        )
        #expect((seconds.last ?? .infinity) <= 5, "an erasure took longer than 5 s: \(acknowledged)")

        // Nothing of the leavers is left; the stayers' data is all there.
        whole.simulator.stop()
        let folders = [whole.blobs, whole.socialBlobs]
        for person in leavers {
            let left = try await stack.database.erasureFindings(of: try #require(UUID(uuidString: person.id)), blobFolders: folders)
            #expect(left.isEmpty, "left of \(person.id): \(left)")
        }
        let stayer = try await stack.database.erasureFindings(of: try #require(UUID(uuidString: stayers[0].id)), blobFolders: folders)
        #expect(
            Set(stayer.map { $0.place.split(separator: ".").first.map(String.init) ?? "" }).isSuperset(of: ["auth", "social", "render", "tracking"])
        )
        await whole.stop()
        await stack.stop()
    }
}

/// One call with a bearer token and a JSON body: the status and the body as text.
private func call(_ method: HTTPMethod, _ url: String, token: String, json: String) async throws -> (status: Int, body: String) {
    var request = HTTPClientRequest(url: url)
    request.method = method
    request.headers.add(name: "Authorization", value: "Bearer \(token)")
    request.headers.add(name: "Content-Type", value: "application/json")
    request.body = .bytes(ByteBuffer(string: json))
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
    let body = try await response.body.collect(upTo: 1 << 20)
    return (Int(response.status.code), String(buffer: body))
}
