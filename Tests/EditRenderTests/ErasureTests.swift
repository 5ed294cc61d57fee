import Contracts
import EventBus
import Foundation
import LocalStack
import TestSupport
import Testing

/// A deleted user (`auth.user.deleted.v1`) is erased from edit-render: their uploads, edits and
/// every blob of theirs, nothing of anyone else touched, and the erasure acknowledged on
/// `render.erasures` with what was removed.
@Suite("Erasing a deleted user from edit-render")
struct RenderErasureTests {
    @Test func uploadsEditsAndTheirBlobsGoAndNothingOfAnyoneElse() async throws {
        try await RenderHarness.with { render in
            let (ana, ben) = (UUID(), UUID())
            let photo = try RenderHarness.photo("Aqua")
            var edits: [String] = []
            for user in [ana, ben] {
                let uploaded = try await render.upload(photo, user: user)
                #expect(uploaded.status == 201)
                let upload = try #require(try uploaded.json()["uploadId"] as? String)
                for source in [#"{"uploadId":"\#(upload)"}"#, #"{"unsplashPhotoId":"Storm"}"#] {
                    let created = try await render.createEdit(#"{"source":\#(source),"filters":[{"name":"sepia","intensity":0.5}]}"#, user: user)
                    #expect(created.status == 202)
                    edits.append(try #require(try created.json()["id"] as? String))
                }
            }
            for (index, id) in edits.enumerated() {
                #expect(try await render.finished(id, user: index < 2 ? ana : ben)["status"] as? String == "completed")
            }
            let bensBlobs = files(of: ben, in: render)
            #expect(bensBlobs.count == 3 && files(of: ana, in: render).count == 3)

            try await TestKafka.shared.publish([UserDeleted(userId: ana, deletedAt: Date())], source: "/splash/auth")
            try await waitUntilReady("ana's edits erased", timeout: .seconds(30)) {
                (try? await render.count("edits", where: "user_id = '\(ana.uuidString.lowercased())'")) == 0
            }
            #expect(try await render.count("uploads", where: "user_id = '\(ana.uuidString.lowercased())'") == 0)
            #expect(files(of: ana, in: render).isEmpty)
            #expect(try await render.count("edits", where: "user_id = '\(ben.uuidString.lowercased())'") == 2)
            #expect(try await render.count("uploads", where: "user_id = '\(ben.uuidString.lowercased())'") == 1)
            #expect(files(of: ben, in: render) == bensBlobs)
            // Ana's still-valid token is refused; Ben's works.
            try await waitUntilReady("ana's token refused", timeout: .seconds(10)) {
                (try? await render.call(.get, "/v1/edits", user: ana))?.status == 401
            }
            #expect(try await render.call(.get, "/v1/edits", user: ben).status == 200)

            let acknowledged = try await render.database.erasureAcknowledgements(RenderUserErased.self, of: ana, schema: "render")
            #expect(acknowledged.map(\.type) == [RenderUserErased.type])
            let erased = try EventJSON.decoder.decode(RenderUserErased.self, from: Data(try #require(acknowledged.first).data))
            #expect(erased.counts == ["uploads": 1, "edits": 2, "blobs": 3])
            let report = try await EventSchemaCheck.validate(acknowledged)
            #expect(report.contains("validated 1 payload(s), 0 failure(s)"), "\(report)")
        }
    }

    @Test func aRenderThatFinishesAfterTheErasureLeavesNoBlob() async throws {
        try await RenderHarness.with { render in
            let ana = UUID()
            // The source takes 3 s to come: the worker holds the edit while Ana is erased.
            let created = try await render.createEdit(#"{"source":{"unsplashPhotoId":"slow-Aqua"},"filters":[]}"#, user: ana)
            #expect(created.status == 202)
            let id = try #require(try created.json()["id"] as? String)
            try await waitUntilReady("the edit claimed by a worker", timeout: .seconds(20)) {
                (try? await render.count("edits", where: "id = '\(id)' AND status = 'rendering'")) == 1
            }
            try await TestKafka.shared.publish([UserDeleted(userId: ana, deletedAt: Date())], source: "/splash/auth")
            #expect(try await !render.database.awaitErasureAcknowledgements(RenderUserErased.self, of: ana, schema: "render").isEmpty)
            #expect(try await render.count("edits", where: "id = '\(id)'") == 0)
            // The render finishes into a deleted edit: its blob is written, then deleted.
            try await waitUntilReady("the late render's blob written and deleted", timeout: .seconds(20)) {
                render.logs.text.contains("deleted while it rendered") && files(of: ana, in: render).isEmpty
            }
            try await Task.sleep(for: .seconds(1))
            #expect(files(of: ana, in: render).isEmpty)
        }
    }

    private func files(of user: UUID, in render: RenderHarness) -> [String] {
        let folder = render.blobs.appendingPathComponent(user.uuidString.lowercased())
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        return (walker?.compactMap { ($0 as? URL)?.path } ?? []).filter { !$0.hasSuffix("/") && !FileManager.default.isDirectory($0) }.sorted()
    }
}

extension FileManager {
    fileprivate func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }
}
