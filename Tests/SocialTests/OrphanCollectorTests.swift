import AsyncHTTPClient
import Blobs
import Foundation
import LocalStack
import NIOCore
import TestSupport
import Testing

@Suite("Orphans") struct OrphanCollectorTests {
    @Test func aPendingUploadIsCollectedPastItsLifetimeAndNothingElseIs() async throws {
        // A lifetime no step of the test comes near, however slow the machine: what is to be
        // collected is made old by hand below (a kept upload must never be taken before its post).
        try await SocialHarness.with(["SOCIAL_ORPHAN_TTL": "1h", "SOCIAL_COLLECTOR_INTERVAL": "200ms"]) { social in
            let ana = UUID()
            let flower = try SocialHarness.photo("FreshFlower")
            #expect(try await social.upload(flower, name: "\(ana.uuidString)/kept.jpg", user: ana).status == 200)
            #expect(try await social.post(#"{"photo":{"objectKey":"posts/\#(ana.uuidString)/kept.jpg"}}"#, user: ana).status == 201)
            #expect(try await social.upload(flower, bucket: "avatars", name: "\(ana.uuidString)/me.jpg", user: ana).status == 200)
            #expect(try await social.upload(flower, name: "\(ana.uuidString)/forgotten.jpg", user: ana).status == 200)
            // A blob whose upload died before its row was written, an hour ago: only its intent says so.
            let interrupted = BlobKey("posts/\(ana.uuidString.lowercased())/\(UUID().uuidString.lowercased())")!
            try await FileBlobStore(root: social.blobs).put(interrupted, bytes: flower)
            #expect(social.blobFiles().count == 4)
            try await social.database.withClient { client in
                try await client.query(
                    "INSERT INTO social.blob_intents (blob_key, action, created_at) VALUES (\(interrupted.path), 'upload', now() - interval '1 hour')"
                )
                // The forgotten upload, pending for two hours now.
                try await client.query("UPDATE social.objects SET updated_at = now() - interval '2 hours' WHERE name LIKE '%/forgotten.jpg'")
            }

            try await social.waitFor("the orphans to be collected", timeout: .seconds(40)) {
                let objects = try await social.count("objects")
                let intents = try await social.count("blob_intents")
                return objects == 2 && intents == 0 && social.blobFiles().count == 2
            }
            #expect(try await social.count("objects", where: "name LIKE '%/forgotten.jpg'") == 0)
            #expect(try await social.count("objects", where: "state = 'attached'") == 1)
            #expect(try await social.count("objects", where: "bucket = 'avatars'") == 1)
            // The post still shows its image.
            let feed = try await social.call(.get, "/v1/feed", user: ana).json()
            let url = try #require(((feed["items"] as? [[String: Any]])?.first?["media"] as? [String: Any])?["url"] as? String)
            #expect(try await social.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil).status == 200)
        }
    }

    /// The service killed outright between the upload (blob and pending row written) and the post
    /// that would attach it: started again, its collector removes the upload; no post ever points
    /// at a missing object.
    @Test func aServiceKilledBeforeThePostLeavesOnlyAnUploadTheCollectorRemoves() async throws {
        let catalog = FakePhotoCatalog(images: [:])
        try await catalog.start()
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("social-blobs-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: blobs) }
        let service = try await ServiceHarness.prepare(
            .init(schema: "social", databasePoolSize: 12, keys: ("SOCIAL", catalog.baseURL + "/jwks.json")),
            settings: SocialHarness.settings(catalog: catalog, blobs: blobs),
            overrides: ["SOCIAL_COLLECTOR_INTERVAL": "200ms"]
        )
        let database = try #require(service.database)
        var environment = service.environment
        let ana = UUID()
        let token = try testAccessToken(user: ana, key: catalog.key, issuer: SocialHarness.issuer)

        let first = try await ServiceProcess("social", environment: environment)
        var request = HTTPClientRequest(url: "\(first.baseURL)/storage/v1/object/posts/\(ana.uuidString)/draft.jpg")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(bytes: try SocialHarness.photo("FreshFlower")))
        #expect(try await HTTPClient.shared.execute(request, timeout: .seconds(30)).status == .ok)
        await first.kill()
        #expect(try await database.count("social.objects", where: "state = 'pending'") == 1)

        environment["SOCIAL_ORPHAN_TTL"] = "1s"
        let second = try await ServiceProcess("social", environment: environment)
        try await waitUntilReady("the collector", timeout: .seconds(20)) {
            let objects = (try? await database.count("social.objects")) ?? 1
            let intents = (try? await database.count("social.blob_intents")) ?? 1
            return objects == 0 && intents == 0
        }
        #expect(SocialHarness.files(under: blobs).isEmpty, "\(SocialHarness.files(under: blobs))")
        #expect(try await database.count("social.posts") == 0)
        await second.stop()
        await catalog.stop()
    }
}
