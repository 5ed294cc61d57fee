import AsyncHTTPClient
import Foundation
import Identity
import LocalStack
import NIOCore
import NIOHTTP1
import S3Blobs
import TestSupport
import Testing

/// The photo editor's path as it runs: auth, photo-catalog (its bundled photos), edit-render,
/// social and the gateway as processes on a real Postgres and the test Kafka cluster, every call
/// over sockets through the gateway, and supabase-py's storage client unchanged.
@Suite("social through the gateway") struct ThroughTheGatewayTests {
    /// The whole stack, stopped (and its blob folder removed) when released.
    final class Stack: Sendable {
        let gateway: ServiceProcess
        let processes: [ServiceProcess]
        let blobs: URL
        let database: TestDatabase
        /// The S3-protocol server both services keep their blobs on, and their bucket, with `s3`.
        let s3: (server: MotoServer, bucket: S3BlobStore)?

        /// - Parameter tracking: whether tracking runs too (behind `/v1/restaurants`, `/v1/orders`
        ///   and their `/rest/v1` tables), without seeded restaurants.
        /// - Parameter s3: whether edit-render and social keep their blobs in one S3 bucket (moto),
        ///   as replicas on several hosts do, instead of a shared folder.
        init(tracking: Bool = false, s3: Bool = false) async throws {
            let database = try await TestPostgres.shared.makeDatabase()
            self.database = database
            var blobSettings: [String: String] = [:]
            if s3 {
                let server = try await MotoServer()
                let bucket = "e2e-\(UUID().uuidString.prefix(8).lowercased())"
                self.s3 = (server, try await server.store(bucket: bucket))
                blobSettings = server.blobSettings(bucket: bucket)
            } else {
                self.s3 = nil
            }
            let kafka = try await TestKafka.shared.running()
            let issuer = "http://localhost:8080/auth/v1"
            let mediaKey = "media-signing-key-for-tests-0123456789abcdef"
            let serviceToken = "catalog-service-token-for-tests-0123456789"
            blobs = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-blobs-\(UUID().uuidString.prefix(8))")
            let common = [
                "KAFKA_BROKERS": kafka.bootstrapServers, "KAFKA_CREATE_TOPICS": "false", "KAFKA_FETCH_MAX_WAIT": "10ms",
                "OUTBOX_POLL_INTERVAL": "100ms", "LOG_LEVEL": "warning",
            ].merging(blobSettings) { _, new in new }.merging(ServiceHarness.consumerGroups()) { own, _ in own }
            func role(_ schema: String) async throws -> String { try await database.makeServiceRole(schema: schema, password: "e2e-\(schema)").url }

            let auth = try await ServiceProcess(
                "auth",
                environment: common.merging([
                    "DATABASE_URL": try await role("auth"), "AUTH_JWT_KEY": SigningKey.generate().pem, "AUTH_JWT_ISSUER": issuer,
                    "AUTH_BCRYPT_COST": "4", "AUTH_TRUSTED_PROXIES": "127.0.0.1/32",
                ]) { _, new in new }
            )
            let jwks = ["JWKS_URL": "\(auth.baseURL)/auth/v1/.well-known/jwks.json", "JWT_ISSUER": issuer]
            func keys(_ prefix: String) -> [String: String] { Dictionary(uniqueKeysWithValues: jwks.map { ("\(prefix)_\($0.key)", $0.value) }) }
            // Its fixture photos' URLs name its own address, where edit-render fetches them.
            let catalogPort = freePort()
            let catalog = try await ServiceProcess(
                "photo-catalog",
                environment: common.merging(keys("CATALOG")) { _, new in new }.merging([
                    "DATABASE_URL": try await role("catalog"), "CATALOG_PUBLIC_URL": "http://127.0.0.1:\(catalogPort)",
                    "CATALOG_SERVICE_TOKEN": serviceToken,
                ]) { _, new in new },
                port: catalogPort
            )
            let render = try await ServiceProcess(
                "edit-render",
                environment: common.merging(keys("RENDER")) { _, new in new }.merging([
                    "DATABASE_URL": try await role("render"), "RENDER_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": mediaKey, "RENDER_WORKERS": "2",
                    "RENDER_WORKER_GROUP": "e2e-\(UUID().uuidString.prefix(8))", "RENDER_PHOTO_CATALOG_URL": catalog.baseURL,
                    "CATALOG_SERVICE_TOKEN": serviceToken, "RENDER_SOURCE_HOSTS": "127.0.0.1", "RENDER_ALLOW_PRIVATE_SOURCES": "true",
                ]) { _, new in new }
            )
            let social = try await ServiceProcess(
                "social",
                environment: common.merging(keys("SOCIAL")) { _, new in new }.merging([
                    "DATABASE_URL": try await role("social"), "SOCIAL_BLOB_DIR": blobs.path, "RENDER_MEDIA_KEY": mediaKey,
                    "SOCIAL_PHOTO_CATALOG_URL": catalog.baseURL, "CATALOG_SERVICE_TOKEN": serviceToken,
                    "SOCIAL_PROJECTION_GROUP": "e2e-\(UUID().uuidString.prefix(8))",
                ]) { _, new in new }
            )
            let trackingProcess: ServiceProcess? =
                tracking
                ? try await ServiceProcess(
                    "tracking",
                    environment: common.merging(keys("TRACKING")) { _, new in new }.merging([
                        "DATABASE_URL": try await role("tracking"), "TRACKING_SEED": "false",
                    ]) { _, new in new }
                ) : nil
            gateway = try await ServiceProcess(
                "gateway",
                environment: common.merging(
                    [
                        "GATEWAY_AUTH_URL": auth.baseURL, "GATEWAY_JWT_ISSUER": issuer, "GATEWAY_PHOTO_CATALOG_URL": catalog.baseURL,
                        "GATEWAY_EDIT_RENDER_URL": render.baseURL, "GATEWAY_SOCIAL_URL": social.baseURL,
                    ].merging(trackingProcess.map { ["GATEWAY_TRACKING_URL": $0.baseURL] } ?? [:]) { _, new in new }
                ) { _, new in new }
            )
            processes = [gateway] + (trackingProcess.map { [$0] } ?? []) + [social, render, catalog, auth]
        }

        func stop() async {
            for process in processes { await process.stop() }
            s3?.server.stop()
            try? FileManager.default.removeItem(at: blobs)
        }

        struct Answer {
            var status: Int
            var body: Data
            var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:] }
            var text: String { String(decoding: body, as: UTF8.self) }
        }

        func call(
            _ method: HTTPMethod,
            _ path: String,
            token: String?,
            json: String? = nil,
            bytes: [UInt8]? = nil,
            headers: [(String, String)] = []
        ) async throws -> Answer {
            var request = HTTPClientRequest(url: gateway.baseURL + path)
            request.method = method
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let json {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: json))
            } else if let bytes {
                request.body = .bytes(ByteBuffer(bytes: bytes))
            }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            return Answer(status: Int(response.status.code), body: Data(buffer: try await response.body.collect(upTo: 32 << 20)))
        }

        struct Person {
            var id: String
            var email: String
            var token: String
        }

        func signUp(_ username: String) async throws -> Person {
            let email = "\(username)@example.com"
            let answer = try await call(
                .POST,
                "/auth/v1/signup",
                token: nil,
                json: #"{"email":"\#(email)","password":"correct horse 1","data":{"username":"\#(username)"}}"#,
                headers: [("apikey", "anon-key")]
            )
            #expect(answer.status == 200, "\(answer.text)")
            let user = try #require(answer.json["user"] as? [String: Any])
            return Person(id: try #require(user["id"] as? String), email: email, token: try #require(answer.json["access_token"] as? String))
        }

        /// The keys of the S3 bucket the services share.
        func bucketKeys() async throws -> [String] {
            try await s3?.bucket.list(prefix: "").map(\.key) ?? []
        }

        /// Polls `condition` (the projections and renders are asynchronous).
        func eventually(_ what: String, _ condition: @Sendable () async throws -> Bool) async throws {
            try await TestSupport.eventually(what, timeout: .seconds(60), condition)
        }
    }

    @Test func twoUsersLikeCollectUploadPostAndSeeTheFeedAndRenamesLive() async throws {
        try await WholeStackTurns.take {
            // On S3: the blobs of both services in one bucket, as on several hosts.
            let stack = try await Stack(s3: true)
            do {
                try await run(stack)
                // Every blob went to the bucket: the edit edit-render rendered, the posts' images.
                let keys = try await stack.bucketKeys()
                #expect(keys.contains { $0.hasSuffix("/edited.jpg") } && keys.contains { $0.hasPrefix("posts/") }, "\(keys)")
                #expect(!FileManager.default.fileExists(atPath: stack.blobs.path), "nothing in the folder")
            } catch {
                Issue.record("\(error)")
            }
            await stack.stop()
        }
    }

    private func run(_ stack: Stack) async throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        let ana = try await stack.signUp("ana_\(tag)")
        let ben = try await stack.signUp("ben_\(tag)")

        // Likes: an Unsplash photo of the catalog, then a completed edit of Ana's.
        #expect(try await stack.call(.PUT, "/v1/likes/unsplash:mate-aqua-01", token: ana.token).status == 201)
        #expect(try await stack.call(.DELETE, "/v1/likes/unsplash:mate-aqua-01", token: ana.token).status == 204)
        #expect(try await stack.call(.PUT, "/v1/likes/unsplash:mate-aqua-01", token: ana.token).status == 201)
        let edit = try await stack.call(
            .POST,
            "/v1/edits",
            token: ana.token,
            json: #"{"source":{"unsplashPhotoId":"mate-aqua-01"},"filters":[{"name":"sepia"}],"output":{"longestEdge":480}}"#,
            headers: [("Idempotency-Key", "e2e-edit")]
        )
        #expect(edit.status == 202, "\(edit.text)")
        let editID = try #require(edit.json["id"] as? String)
        try await stack.eventually("the edit to be liked once rendered and projected") {
            try await stack.call(.PUT, "/v1/likes/edit:\(editID)", token: ana.token).status == 201
        }
        #expect(try await stack.call(.PUT, "/v1/likes/edit:\(editID)", token: ben.token).status == 404, "not posted: Ana's alone")
        let mine = try await stack.call(.GET, "/v1/likes", token: ana.token).json
        let liked = try #require(mine["items"] as? [[String: Any]])
        #expect(liked.map { $0["photoKey"] as? String } == ["edit:\(editID)", "unsplash:mate-aqua-01"])
        #expect((((liked[1]["photo"] as? [String: Any])?["unsplash"] as? [String: Any])?["user"] as? [String: Any])?["name"] != nil)

        // Collections: a private one is Ana's alone, a public one Ben can read.
        let secret = try #require(
            try await stack.call(.POST, "/v1/collections", token: ana.token, json: #"{"title":"Mine","private":true}"#).json["id"] as? String
        )
        let shared = try #require(
            try await stack.call(.POST, "/v1/collections", token: ana.token, json: #"{"title":"Ours","private":false}"#).json["id"] as? String
        )
        #expect(try await stack.call(.PUT, "/v1/collections/\(shared)/photos/unsplash:mate-aqua-01", token: ana.token).status == 201)
        #expect(try await stack.call(.GET, "/v1/collections/\(secret)", token: ben.token).status == 404)
        #expect(try await stack.call(.GET, "/v1/collections/\(shared)/photos", token: ben.token).status == 200)

        // Ben follows the public feed live, over SSE, before Ana posts.
        let feed = EventStreamClient(url: "\(stack.gateway.baseURL)/v1/events?channels=feed", token: ben.token)
        #expect(try await feed.waitForStatus() == 200)

        // Storage: Ana uploads under her own id; Ben cannot write there.
        let photo = try SocialHarness.photo("Aqua")
        #expect(
            try await stack.call(
                .POST,
                "/storage/v1/object/posts/\(ana.id)/beach.jpg",
                token: ana.token,
                bytes: photo,
                headers: [("Content-Type", "image/jpeg")]
            ).status == 200
        )
        #expect(try await stack.call(.POST, "/storage/v1/object/posts/\(ana.id)/ben.jpg", token: ben.token, bytes: photo).status == 403)
        #expect(try await stack.call(.POST, "/storage/v1/object/posts/\(ana.id)/anon.jpg", token: nil, bytes: photo).status == 401)

        let post = try await stack.call(
            .POST,
            "/v1/posts",
            token: ana.token,
            json: #"{"photo":{"objectKey":"posts/\#(ana.id)/beach.jpg"},"caption":"Sand 🏖️"}"#,
            headers: [("Idempotency-Key", "e2e-post")]
        )
        #expect(post.status == 201, "\(post.text)")
        let postID = try #require(post.json["id"] as? String)
        let live = try await feed.event(within: .seconds(10)) { $0.event == "social.post.created.v1" && $0.data.contains(postID) }
        #expect(live.data.contains("\"channel\":\"feed\""))

        // Ben sees it in the feed with Ana's name, and its image downloads through its link.
        let page = try await stack.call(.GET, "/v1/feed", token: ben.token).json
        let item = try #require((page["items"] as? [[String: Any]])?.first { $0["id"] as? String == postID })
        #expect((item["author"] as? [String: Any])?["username"] as? String == "ana_\(tag)")
        let url = try #require((item["media"] as? [String: Any])?["url"] as? String)
        let link = try #require(url.range(of: "/storage/v1/")).lowerBound
        let image = try await stack.call(.GET, String(url[link...]), token: nil)
        #expect(image.status == 200 && image.body.count > 10_000)

        // Ben may not delete it; a rename of Ana shows on the old post.
        #expect(try await stack.call(.DELETE, "/v1/posts/\(postID)", token: ben.token).status == 403)
        #expect(try await stack.call(.PUT, "/auth/v1/user", token: ana.token, json: #"{"data":{"username":"ana_b_\#(tag)"}}"#).status == 200)
        try await stack.eventually("the rename on the old post") {
            let post = try await stack.call(.GET, "/v1/posts/\(postID)", token: ben.token).json
            return (post["author"] as? [String: Any])?["username"] as? String == "ana_b_\(tag)"
        }

        // supabase-py's storage client, pointed at the gateway, unchanged.
        let script = try #require(Bundle.module.url(forResource: "supabase_storage_flow", withExtension: "py", subdirectory: "Fixtures"))
        let image2 = SocialHarness.fixtures.appendingPathComponent("FreshFlower.jpg")
        let output = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", script.path, stack.gateway.baseURL, "anon-key", ana.email, "correct horse 1", image2.path]
        ).runToCompletion()
        #expect(output.contains("all steps passed"), "\(output)")

        // A 16 MB photo by tuspy in 6 MiB chunks through the gateway, resumed by a new client after
        // every chunk, its parts in the bucket: the object ends byte-identical.
        let tus = try #require(Bundle.module.url(forResource: "tus_resume", withExtension: "py", subdirectory: "Fixtures"))
        let name = "\(ana.id)/elephants.jpg"
        let resumed = try await ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", tus.path, stack.gateway.baseURL + "/storage/v1", ana.token, "posts", name, LargePainting.url.path, String(6 << 20),
                "anon-key",
            ]
        ).runToCompletion()
        #expect(resumed.contains("all steps passed"), "\(resumed)")
        let stored = try await stack.call(.GET, "/storage/v1/object/posts/\(name)", token: ana.token, headers: [("apikey", "anon-key")])
        let painting = try Data(contentsOf: LargePainting.url)
        #expect(stored.status == 200 && stored.body == painting)
    }
}
