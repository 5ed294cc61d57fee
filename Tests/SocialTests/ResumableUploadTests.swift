import Contracts
import Foundation
import LocalStack
import TestSupport
import Testing

/// TUS resumable uploads at `/storage/v1/upload/resumable`.
@Suite("Resumable uploads") struct ResumableUploadTests {
    static func metadata(_ fields: [String: String]) -> String {
        fields.sorted { $0.key < $1.key }.map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }.joined(separator: ",")
    }

    /// `POST /storage/v1/upload/resumable` for `name` of `length` bytes.
    static func create(
        _ social: SocialHarness,
        user: UUID,
        name: String,
        length: Int,
        extra: [(String, String)] = [],
        contentType: String = "image/jpeg"
    ) async throws -> TestResponse {
        try await social.call(
            .post,
            "/storage/v1/upload/resumable",
            user: user,
            headers: [
                ("Tus-Resumable", "1.0.0"), ("Upload-Length", String(length)),
                ("Upload-Metadata", metadata(["bucketName": "posts", "objectName": name, "contentType": contentType])),
            ] + extra
        )
    }

    static func patch(_ social: SocialHarness, _ location: String, user: UUID, offset: Int, _ bytes: ArraySlice<UInt8>) async throws -> TestResponse {
        try await social.call(
            .patch,
            location,
            user: user,
            headers: [("Tus-Resumable", "1.0.0"), ("Upload-Offset", String(offset)), ("Content-Type", "application/offset+octet-stream")],
            bytes: Array(bytes)
        )
    }

    @Test func anUploadTakesItsChunksInOrderAndBecomesItsObjectOnlyWhenWhole() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let flower = try SocialHarness.photo("FreshFlower")
            let name = "\(ana.uuidString)/train.jpg"

            let discovery = try await social.call(.options, "/storage/v1/upload/resumable", user: nil)
            #expect(discovery.status == 204 && discovery.headers["tus-version"] == "1.0.0")
            #expect(discovery.headers["tus-extension"] == "creation,creation-with-upload,termination,expiration")
            #expect(discovery.headers["tus-max-size"] == String(25 << 20))

            let created = try await Self.create(social, user: ana, name: name, length: flower.count)
            #expect(created.status == 201, "\(created.text)")
            let location = try #require(created.headers["location"])
            #expect(location.hasPrefix("/storage/v1/upload/resumable/") && created.headers["upload-expires"] != nil)
            let head = try await social.call(.head, location, user: ana)
            #expect(head.status == 200 && head.headers["upload-offset"] == "0" && head.headers["upload-length"] == String(flower.count))
            #expect(head.headers["cache-control"] == "no-store")

            let half = flower.count / 2
            #expect(try await Self.patch(social, location, user: ana, offset: 5, flower[5..<half]).status == 409)
            let first = try await Self.patch(social, location, user: ana, offset: 0, flower[0..<half])
            #expect(first.status == 204 && first.headers["upload-offset"] == String(half))
            // The same chunk again, someone else's hands, a wrong type, past the length: refused,
            // and the upload stays where it was.
            let again = try await Self.patch(social, location, user: ana, offset: 0, flower[0..<half])
            #expect(again.status == 409 && (try? again.json())?["error"] as? String == "offset_mismatch")
            #expect(try await Self.patch(social, location, user: ben, offset: half, flower[half...]).status == 404)
            #expect(try await social.call(.head, location, user: ben).status == 404)
            let wrongType = try await social.call(
                .patch,
                location,
                user: ana,
                headers: [("Tus-Resumable", "1.0.0"), ("Upload-Offset", String(half)), ("Content-Type", "image/jpeg")],
                bytes: Array(flower[half...])
            )
            #expect(wrongType.status == 415)
            #expect(try await Self.patch(social, location, user: ana, offset: half, flower[half...] + [0, 0]).status == 413)
            #expect(try await social.call(.head, location, user: ana).headers["upload-offset"] == String(half))
            #expect(try await social.count("objects") == 0)

            let last = try await Self.patch(social, location, user: ana, offset: half, flower[half...])
            #expect(last.status == 204 && last.headers["upload-offset"] == String(flower.count))
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == flower)
            // Done: the upload and its parts are gone; only the object's blob is left.
            #expect(try await social.call(.head, location, user: ana).status == 404)
            #expect(try await social.count("resumable_uploads") == 0)
            #expect(try await social.count("resumable_parts") == 0)
            #expect(social.blobFiles().count == 1, "\(social.blobFiles())")
            #expect(try await social.count("blob_intents") == 0)

            // An upload past its day: 410, to a chunk and to a HEAD (the collector, a minute
            // away here, takes it later).
            let late = try #require(
                try await Self.create(social, user: ana, name: "\(ana.uuidString)/late.jpg", length: flower.count).headers["location"]
            )
            try await social.database.withClient { client in
                try await client.query("UPDATE social.resumable_uploads SET expires_at = now() - interval '1 minute'")
            }
            #expect(try await Self.patch(social, late, user: ana, offset: 0, flower[...]).status == 410)
            #expect(try await social.call(.head, late, user: ana).status == 410)
        }
    }

    @Test func whatCouldNeverBeStoredIsRefusedAndNothingIsKeptHalfWay() async throws {
        try await SocialHarness.with(["SOCIAL_ORPHAN_TTL": "1h", "SOCIAL_COLLECTOR_INTERVAL": "200ms"]) { social in
            let ana = UUID()
            let id = ana.uuidString
            let tus = ("Tus-Resumable", "1.0.0")
            // Refused at creation: no version, no length, too long, another's name, not an image,
            // metadata that is not base64, a name in use without x-upsert.
            let noVersion = try await social.call(.post, "/storage/v1/upload/resumable", user: ana, headers: [("Upload-Length", "10")])
            #expect(noVersion.status == 412 && noVersion.headers["tus-version"] == "1.0.0")
            let noLength = try await social.call(
                .post,
                "/storage/v1/upload/resumable",
                user: ana,
                headers: [tus, ("Upload-Metadata", Self.metadata(["bucketName": "posts", "objectName": "\(id)/a.jpg"]))]
            )
            #expect(noLength.status == 400)
            #expect(try await Self.create(social, user: ana, name: "\(id)/big.jpg", length: 26 << 20).status == 413)
            #expect(try await Self.create(social, user: ana, name: "\(UUID().uuidString)/theirs.jpg", length: 10).status == 403)
            #expect(try await Self.create(social, user: ana, name: "\(id)/doc.pdf", length: 10, contentType: "application/pdf").status == 415)
            let garbled = try await social.call(
                .post,
                "/storage/v1/upload/resumable",
                user: ana,
                headers: [tus, ("Upload-Length", "10"), ("Upload-Metadata", "bucketName cG9zdHM=,objectName ***")]
            )
            #expect(garbled.status == 400 && (try? garbled.json())?["error"] as? String == "InvalidRequest")
            #expect(try await social.upload(try SocialHarness.photo("Aqua"), name: "\(id)/taken.jpg", user: ana).status == 200)
            #expect(try await Self.create(social, user: ana, name: "\(id)/taken.jpg", length: 10).status == 409)
            #expect(try await Self.create(social, user: ana, name: "\(id)/taken.jpg", length: 10, extra: [("x-upsert", "true")]).status == 201)

            // Bytes that are no image, declared as one: refused when the last lands, nothing kept.
            let text = Array(String(repeating: "not a photo, only words. ", count: 40).utf8)
            let fake = try #require(try await Self.create(social, user: ana, name: "\(id)/fake.jpg", length: text.count).headers["location"])
            #expect(try await Self.patch(social, fake, user: ana, offset: 0, text[0..<500]).status == 204)
            let refused = try await Self.patch(social, fake, user: ana, offset: 500, text[500...])
            #expect(refused.status == 415 && (try? refused.json())?["error"] as? String == "invalid_mime_type")
            #expect(try await social.count("objects", where: "name LIKE '%/fake.jpg'") == 0)
            #expect(try await social.call(.head, fake, user: ana).status == 404)

            // Termination deletes what arrived.
            let flower = try SocialHarness.photo("FreshFlower")
            let ended = try #require(try await Self.create(social, user: ana, name: "\(id)/ended.jpg", length: flower.count).headers["location"])
            #expect(try await Self.patch(social, ended, user: ana, offset: 0, flower[0..<1000]).status == 204)
            #expect(try await social.call(.delete, ended, user: ana, headers: [tus]).status == 204)
            #expect(try await social.call(.head, ended, user: ana).status == 404)

            // An upload past its day: 410, and the collector takes it with its parts.
            let late = try #require(try await Self.create(social, user: ana, name: "\(id)/late.jpg", length: flower.count).headers["location"])
            #expect(try await Self.patch(social, late, user: ana, offset: 0, flower[0..<1000]).status == 204)
            try await social.database.withClient { client in
                try await client.query("UPDATE social.resumable_uploads SET expires_at = now() - interval '1 minute' WHERE name LIKE '%/late.jpg'")
            }
            try await social.waitFor("the expired upload collected") {
                try await social.count("resumable_uploads", where: "name LIKE '%/late.jpg'") == 0
            }
            try await social.waitFor("every part's blob deleted") {
                let parts = try await social.count("resumable_parts")
                return parts == 0 && social.blobFiles().filter { $0.contains("/tus-") }.isEmpty
            }
            #expect(try await social.count("objects") == 1)
        }
    }

    /// A chunk cut off mid-way (the train enters a tunnel): what arrived is kept, the offset says
    /// how far, and the upload goes on from there to a whole object.
    @Test func aChunkCutOffMidwayKeepsWhatArrived() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let flower = try SocialHarness.photo("FreshFlower")
            let name = "\(ana.uuidString)/tunnel.jpg"
            let location = try #require(try await Self.create(social, user: ana, name: name, length: flower.count).headers["location"])
            // Declares the whole photo, sends 40,000 bytes of it, and hangs up.
            let cut = """
                import socket, sys, time
                port, path, token, file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
                data = open(file, "rb").read()
                head = (f"PATCH {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer {token}\\r\\nTus-Resumable: 1.0.0\\r\\n"
                        f"Upload-Offset: 0\\r\\nContent-Type: application/offset+octet-stream\\r\\nContent-Length: {len(data)}\\r\\n\\r\\n")
                connection = socket.create_connection(("127.0.0.1", port))
                connection.sendall(head.encode() + data[:40000])
                time.sleep(0.5)
                connection.close()
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("tunnel-\(UUID().uuidString.prefix(8)).jpg")
            try Data(flower).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            _ = try await ProcessCommand(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["python3", "-c", cut, String(social.app.port), location, try social.token(user: ana), file.path]
            ).runToCompletion()
            try await social.waitFor("the cut-off chunk's bytes kept") {
                try await social.call(.head, location, user: ana).headers["upload-offset"] == "40000"
            }
            let rest = try await Self.patch(social, location, user: ana, offset: 40_000, flower[40_000...])
            #expect(rest.status == 204 && rest.headers["upload-offset"] == String(flower.count))
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == flower)
            #expect(social.blobFiles().filter { $0.contains("/tus-") }.isEmpty)
        }
    }

    /// On S3 a chunk is a blob of its own, added to the last one while that is under S3's 5 MiB
    /// part minimum, and S3 composes the parts into the object (a multipart upload copying them):
    /// byte-identical, with no part and no open multipart upload left.
    @Test func onS3SmallChunksAreStagedIntoPartsThatS3Composes() async throws {
        let server = try await MotoServer()
        defer { server.stop() }
        let bucket = "tus-\(UUID().uuidString.prefix(8).lowercased())"
        let store = try await server.store(bucket: bucket)
        try await SocialHarness.with(server.blobSettings(bucket: bucket)) { social in
            let ana = UUID()
            let painting = Array(try Data(contentsOf: LargePainting.url))
            let name = "\(ana.uuidString)/painting.jpg"
            let location = try #require(try await Self.create(social, user: ana, name: name, length: painting.count).headers["location"])
            let chunk = 2 << 20
            var sizes: [[Int]] = []
            for offset in stride(from: 0, to: painting.count, by: chunk) {
                let piece = painting[offset..<min(offset + chunk, painting.count)]
                let answer = try await Self.patch(social, location, user: ana, offset: offset, piece)
                #expect(answer.status == 204, "\(answer.text)")
                if offset + piece.count < painting.count {
                    sizes.append(
                        try await social.database.withClient { client in
                            try await client.query("SELECT size FROM social.resumable_parts ORDER BY part_offset").collect().map {
                                try $0.decode(Int.self)
                            }
                        }
                    )
                }
            }
            // 2 MiB, then 4 (staged), then 6: a part; then a new one grows the same way.
            let mib = 1 << 20
            #expect(sizes.prefix(4) == [[2 * mib], [4 * mib], [6 * mib], [6 * mib, 2 * mib]], "\(sizes)")
            let stored = try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana)
            #expect(stored.status == 200 && Array(stored.body) == painting)
            #expect(try await social.count("resumable_parts") == 0)
            try await social.waitFor("the parts' blobs deleted") {
                try await store.list(prefix: "posts/").filter { $0.key.contains("/tus-") }.isEmpty
            }
            #expect(try await store.client.openMultipartUploads().isEmpty)

            // Terminated half-way: its staged part goes.
            let ended = try #require(
                try await Self.create(social, user: ana, name: "\(ana.uuidString)/ended.jpg", length: painting.count).headers["location"]
            )
            #expect(try await Self.patch(social, ended, user: ana, offset: 0, painting[0..<chunk]).status == 204)
            #expect(try await social.call(.delete, ended, user: ana, headers: [("Tus-Resumable", "1.0.0")]).status == 204)
            #expect(try await store.list(prefix: "posts/").filter { $0.key.contains("/tus-") }.isEmpty)
        }
    }

    @Test func aDeletedAccountsUnfinishedUploadsGoWithIt() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            try await social.register(ana, username: "ana_\(ana.uuidString.prefix(6).lowercased())")
            let flower = try SocialHarness.photo("FreshFlower")
            let location = try #require(
                try await Self.create(social, user: ana, name: "\(ana.uuidString)/half.jpg", length: flower.count).headers["location"]
            )
            #expect(try await Self.patch(social, location, user: ana, offset: 0, flower[0..<2000]).status == 204)
            #expect(social.blobFiles().filter { $0.contains("/tus-") }.count == 1)
            try await TestKafka.shared.publish([UserDeleted(userId: ana, deletedAt: Date())], source: "/splash/auth")
            try await social.waitFor("ana's upload erased") { try await social.count("resumable_uploads") == 0 }
            try await social.waitFor("its part's blob deleted") { social.blobFiles().filter { $0.contains("/tus-") }.isEmpty }
            #expect(try await social.count("resumable_parts") == 0)
        }
    }

    @Test func tuspyResumesAfterEveryChunkFromTheStoredURLAndTheObjectIsByteIdentical() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let painting = LargePainting.url
            try #require(FileManager.default.fileExists(atPath: painting.path), "make deps installs mate-backgrounds")
            let name = "\(ana.uuidString)/elephants.jpg"
            let script = try #require(Bundle.module.url(forResource: "tus_resume", withExtension: "py", subdirectory: "Fixtures"))
            let output = try await ProcessCommand(
                URL(fileURLWithPath: "/usr/bin/env"),
                [
                    "python3", script.path, social.app.baseURL + "/storage/v1", try social.token(user: ana), "posts", name, painting.path,
                    String(6 << 20),
                ]
            ).runToCompletion()
            #expect(output.contains("all steps passed") && output.contains("resumed 2 times"), "\(output)")
            let stored = try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana)
            let original = Array(try Data(contentsOf: painting))
            #expect(stored.status == 200 && Array(stored.body) == original)
            #expect(try await social.count("resumable_parts") == 0)
        }
    }
}
