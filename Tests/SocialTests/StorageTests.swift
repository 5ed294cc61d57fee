import Contracts
import Foundation
import Imaging
import TestSupport
import Testing

@testable import Social

@Suite("Storage") struct StorageTests {
    @Test func rawAndMultipartUploadsAreStoredReadAndReplacedOnlyWhenAsked() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let aqua = try SocialHarness.photo("Aqua")
            let flower = try SocialHarness.photo("FreshFlower")
            let name = "\(ana.uuidString)/one.jpg"
            let created = try await social.upload(aqua, name: name, user: ana)
            #expect(created.status == 200)
            #expect(try created.json()["Key"] as? String == "posts/\(name)")
            #expect(UUID(uuidString: try created.json()["Id"] as? String ?? "") != nil)
            let read = try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana)
            #expect(read.status == 200 && Array(read.body) == aqua && read.headers["content-type"] == "image/jpeg")
            #expect(read.headers["cache-control"] == "max-age=3600")

            // The name is taken: refused in Storage's shape, the object untouched.
            let duplicate = try await social.upload(flower, name: name, user: ana)
            #expect(duplicate.status == 409)
            let error = try duplicate.json()
            #expect(error["statusCode"] as? String == "409" && error["error"] as? String == "Duplicate" && error["message"] is String)
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == aqua)
            // With x-upsert, and with PUT, it is replaced; PUT of nothing is 404.
            #expect(try await social.upload(flower, name: name, user: ana, headers: [("x-upsert", "true")]).status == 200)
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == flower)
            #expect(
                try await social.call(.put, "/storage/v1/object/posts/\(name)", user: ana, headers: [("Content-Type", "image/jpeg")], bytes: aqua)
                    .status == 200
            )
            #expect(try await social.call(.put, "/storage/v1/object/posts/\(ana.uuidString)/none.jpg", user: ana, bytes: aqua).status == 404)
            #expect(try await social.count("objects") == 1)

            // Multipart, as supabase-swift sends it: an unnamed field, a text/plain content type.
            let boundary = "splash-boundary-1"
            var form = Array(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"cacheControl\"\r\n\r\n600\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"\"; filename=\"two.jpg\"\r\nContent-Type: text/plain;charset=UTF-8\r\n\r\n"
                    .utf8
            )
            form += flower + Array("\r\n--\(boundary)--\r\n".utf8)
            let multipart = try await social.call(
                .post,
                "/storage/v1/object/avatars/\(ana.uuidString)/two.jpg",
                user: ana,
                headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")],
                bytes: form
            )
            #expect(multipart.status == 200, "\(multipart.text)")
            // The public bucket keeps its objects re-encoded (no camera metadata), at their size.
            let avatar = try await social.call(.get, "/storage/v1/object/avatars/\(ana.uuidString)/two.jpg", user: ben)
            #expect(avatar.status == 200 && avatar.headers["cache-control"] == "max-age=600")
            let shown = try SourceInspection.inspect(Array(avatar.body), limits: SourceLimits())
            let sent = try SourceInspection.inspect(flower, limits: SourceLimits())
            #expect(shown.format == .jpeg && shown.width == sent.width && shown.height == sent.height)
            let info = try await social.call(.get, "/storage/v1/object/info/avatars/\(ana.uuidString)/two.jpg", user: ana).json()
            #expect(info["size"] as? Int == avatar.body.count && info["content_type"] as? String == "image/jpeg")
            let head = try await social.call(.head, "/storage/v1/object/avatars/\(ana.uuidString)/two.jpg", user: ana)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == String(avatar.body.count))

            // Ben cannot read Ana's pending upload, nor write under her id.
            #expect(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ben).status == 404)
            let foreign = try await social.upload(flower, name: "\(ana.uuidString)/ben.jpg", user: ben)
            #expect(try foreign.status == 403 && foreign.json()["statusCode"] as? String == "403")
            #expect(try await social.call(.post, "/storage/v1/object/posts/\(name)", user: nil, bytes: flower).status == 401)
        }
    }

    @Test func avatarsArePublicAndPostsAreNot() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let flower = try SocialHarness.photo("FreshFlower")
            #expect(try await social.upload(flower, bucket: "avatars", name: "\(ana.uuidString)/me.jpg", user: ana).status == 200)
            #expect(try await social.upload(flower, name: "\(ana.uuidString)/me.jpg", user: ana).status == 200)
            #expect(try await social.call(.get, "/storage/v1/object/public/avatars/\(ana.uuidString)/me.jpg", user: nil).status == 200)
            #expect(try await social.call(.get, "/storage/v1/object/public/posts/\(ana.uuidString)/me.jpg", user: nil).status == 404)
            #expect(try await social.call(.get, "/storage/v1/object/public/photos/\(ana.uuidString)/me.jpg", user: nil).status == 404)
            // Avatars are not collected as orphans; an unposted posts object is pending.
            #expect(try await social.count("objects", where: "bucket = 'avatars' AND state = 'stored'") == 1)
        }
    }

    @Test func signedLinksAreBucketedDownloadWithoutATokenAndRefuseTampering() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let name = "\(ana.uuidString)/signed.jpg"
            let aqua = try SocialHarness.photo("Aqua")
            #expect(try await social.upload(aqua, name: name, user: ana).status == 200)
            let signed = try await social.call(.post, "/storage/v1/object/sign/posts/\(name)", user: ana, json: #"{"expiresIn":"600"}"#)
            #expect(signed.status == 200, "\(signed.text)")
            let link = try #require(try signed.json()["signedURL"] as? String)
            #expect(link.hasPrefix("/object/sign/posts/\(name)?token="))
            // The same object signed again within the bucket: the same link.
            #expect(
                try await social.call(.post, "/storage/v1/object/sign/posts/\(name)", user: ana, json: #"{"expiresIn":600}"#).json()["signedURL"]
                    as? String == link
            )

            let download = try await social.call(.get, "/storage/v1" + link, user: nil)
            #expect(download.status == 200 && Array(download.body) == aqua)
            let tampered = link.replacingOccurrences(of: "token=", with: "token=1")
            #expect(try await social.call(.get, "/storage/v1" + tampered, user: nil).status == 400)
            let other = "/object/sign/posts/\(ana.uuidString)/other.jpg?" + link.split(separator: "?")[1]
            #expect(try await social.call(.get, "/storage/v1" + other, user: nil).status == 400)
            // Ben may not sign Ana's pending upload.
            #expect(try await social.call(.post, "/storage/v1/object/sign/posts/\(name)", user: ben, json: #"{"expiresIn":60}"#).status == 404)
            #expect(try await social.call(.post, "/storage/v1/object/sign/posts/\(name)", user: ana, json: #"{"expiresIn":0}"#).status == 400)

            let batch = try await social.call(
                .post,
                "/storage/v1/object/sign/posts",
                user: ana,
                json: #"{"expiresIn":60,"paths":["\#(name)","\#(ana.uuidString)/missing.jpg"]}"#
            )
            let items = try #require(try JSONSerialization.jsonObject(with: batch.body) as? [[String: Any]])
            #expect(items.count == 2)
            #expect(items[0]["error"] is NSNull && (items[0]["signedURL"] as? String)?.hasPrefix("/object/sign/posts/") == true)
            #expect(items[1]["error"] is String && items[1]["signedURL"] is NSNull && items[1]["path"] as? String == "\(ana.uuidString)/missing.jpg")
        }
    }

    @Test func anExpiredLinkIsRefused() async throws {
        try await SocialHarness.with(["SOCIAL_SIGNED_URL_BUCKET": "1s"]) { social in
            let ana = UUID()
            let name = "\(ana.uuidString)/brief.jpg"
            let flower = try SocialHarness.photo("FreshFlower")
            #expect(try await social.upload(flower, name: name, user: ana).status == 200)
            let link = try #require(
                try await social.call(.post, "/storage/v1/object/sign/posts/\(name)", user: ana, json: #"{"expiresIn":1}"#).json()["signedURL"]
                    as? String
            )
            try await Task.sleep(for: .milliseconds(2_100))
            let expired = try await social.call(.get, "/storage/v1" + link, user: nil)
            #expect(expired.status == 400 && expired.text.contains("expired"))
        }
    }

    @Test func listingShowsFoldersAndFilesAndRemovingDeletesBlobsToo() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let photo = try SocialHarness.photo("FreshFlower")
            for name in ["a/b.jpg", "a/c.jpg", "d.jpg"] {
                #expect(try await social.upload(photo, name: "\(ana.uuidString)/\(name)", user: ana).status == 200)
            }
            let top = try await social.call(
                .post,
                "/storage/v1/object/list/posts",
                user: ana,
                json: #"{"prefix":"\#(ana.uuidString)","limit":100,"offset":0,"sortBy":{"column":"name","order":"asc"}}"#
            )
            let entries = try #require(try JSONSerialization.jsonObject(with: top.body) as? [[String: Any]])
            #expect(entries.map { $0["name"] as? String } == ["a", "d.jpg"])
            #expect(entries[0]["id"] is NSNull && (entries[1]["metadata"] as? [String: Any])?["size"] as? Int == photo.count)
            let inner = try await social.call(
                .post,
                "/storage/v1/object/list/posts",
                user: ana,
                json: #"{"prefix":"\#(ana.uuidString)/a/","sortBy":{"column":"name","order":"desc"}}"#
            )
            #expect((try JSONSerialization.jsonObject(with: inner.body) as? [[String: Any]])?.map { $0["name"] as? String } == ["c.jpg", "b.jpg"])
            // Someone else sees none of it.
            let strangers = try await social.call(.post, "/storage/v1/object/list/posts", user: UUID(), json: #"{"prefix":"\#(ana.uuidString)"}"#)
            #expect(strangers.text == "[]")

            let removed = try await social.call(
                .delete,
                "/storage/v1/object/posts",
                user: ana,
                json: #"{"prefixes":["\#(ana.uuidString)/d.jpg","\#(ana.uuidString)/a/b.jpg"]}"#
            )
            #expect((try JSONSerialization.jsonObject(with: removed.body) as? [[String: Any]])?.count == 2)
            #expect(try await social.count("objects") == 1)
            #expect(social.blobFiles().count == 1)
            #expect(try await social.count("blob_intents") == 0)
        }
    }

    @Test func anUploadRetriedWithItsIdempotencyKeyGetsItsFirstAnswer() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let aqua = try SocialHarness.photo("Aqua")
            let flower = try SocialHarness.photo("FreshFlower")
            let name = "\(ana.uuidString)/queued.jpg"
            let key = [("Idempotency-Key", "upload-1")]
            let first = try await social.upload(aqua, name: name, user: ana, headers: key)
            #expect(first.status == 200 && first.headers["idempotent-replayed"] == nil)
            // The app never saw the answer and sends the same upload again: the first answer, not
            // 409 Duplicate, and nothing stored twice.
            let retry = try await social.upload(aqua, name: name, user: ana, headers: key)
            #expect(retry.status == 200 && retry.headers["idempotent-replayed"] == "true")
            #expect(try retry.json()["Id"] as? String == first.json()["Id"] as? String)
            #expect(try await social.count("objects") == 1)
            #expect(social.blobFiles().count == 1)

            // The same key with other bytes, or for another name, is refused in Storage's shape
            // and changes nothing.
            let otherBytes = try await social.upload(flower, name: name, user: ana, headers: key)
            #expect(otherBytes.status == 422)
            #expect(try otherBytes.json()["error"] as? String == "idempotency-key-reused")
            let otherName = try await social.upload(aqua, name: "\(ana.uuidString)/elsewhere.jpg", user: ana, headers: key)
            #expect(otherName.status == 422)
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == aqua)
            // Another key, or none, for a name in use is still a duplicate; someone else's key of
            // the same spelling is theirs.
            #expect(try await social.upload(aqua, name: name, user: ana, headers: [("Idempotency-Key", "upload-2")]).status == 409)
            #expect(try await social.upload(aqua, name: name, user: ana).status == 409)
            let ben = UUID()
            #expect(try await social.upload(flower, name: "\(ben.uuidString)/queued.jpg", user: ben, headers: key).status == 200)

            // A replacement retried (x-upsert) replays too, and leaves the one blob it wrote.
            let upsert = [("Idempotency-Key", "upload-3"), ("x-upsert", "true")]
            let replaced = try await social.upload(flower, name: name, user: ana, headers: upsert)
            #expect(replaced.status == 200 && replaced.headers["idempotent-replayed"] == nil)
            #expect(try await social.upload(flower, name: name, user: ana, headers: upsert).headers["idempotent-replayed"] == "true")
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(name)", user: ana).body) == flower)
            #expect(try await social.count("objects") == 2)
            #expect(social.blobFiles().count == 2)
            #expect(try await social.count("blob_intents") == 0)
            // A key that is not one is refused before a byte is stored.
            let blank = try await social.upload(aqua, name: "\(ana.uuidString)/blank.jpg", user: ana, headers: [("Idempotency-Key", " ")])
            #expect(blank.status == 422)
            #expect(try await social.count("objects") == 2)
        }
    }

    @Test func aSignedUploadURLWritesItsOneObjectWithoutASessionUntilItExpires() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            try await social.register(ana, username: "ana_\(ana.uuidString.prefix(6).lowercased())")
            let aqua = try SocialHarness.photo("Aqua")
            let flower = try SocialHarness.photo("FreshFlower")
            let sign = { (name: String, user: UUID, upsert: Bool) in
                try await social.call(
                    .post,
                    "/storage/v1/object/upload/sign/posts/\(name)",
                    user: user,
                    headers: upsert ? [("x-upsert", "true")] : []
                )
            }
            let put = { (url: String, bytes: [UInt8]) in
                try await social.call(.put, "/storage/v1\(url)", user: nil, headers: [("Content-Type", "image/jpeg")], bytes: bytes)
            }
            let signed = try await sign("\(ana.uuidString)/later.jpg", ana, false)
            #expect(signed.status == 200, "\(signed.text)")
            let url = try #require(try signed.json()["url"] as? String)
            #expect(url.hasPrefix("/object/upload/sign/posts/\(ana.uuidString)/later.jpg?token="))
            let token = String(url[url.range(of: "token=")!.upperBound...])

            // Used without a session: the object is Ana's, checked as any upload.
            #expect(try await put(url, Array("not a photo".utf8)).status == 415)
            let stored = try await put(url, aqua)
            #expect(stored.status == 200, "\(stored.text)")
            #expect(try stored.json()["Key"] as? String == "posts/\(ana.uuidString)/later.jpg")
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(ana.uuidString)/later.jpg", user: ana).body) == aqua)
            // Made without x-upsert, it does not replace; nor is it good for another name, or
            // with its upsert flag or expiry changed.
            #expect(try await put(url, flower).status == 409)
            let parts = token.split(separator: ".")
            for forged in [
                "/object/upload/sign/posts/\(ana.uuidString)/other.jpg?token=\(token)",
                "/object/upload/sign/posts/\(ana.uuidString)/later.jpg?token=\(parts[0]).1.\(parts[2])",
                "/object/upload/sign/posts/\(ana.uuidString)/later.jpg?token=\(Int(parts[0])! + 60).0.\(parts[2])",
                "/object/upload/sign/posts/\(ana.uuidString)/later.jpg?token=nonsense",
                "/object/upload/sign/posts/\(ana.uuidString)/later.jpg",
            ] {
                let refused = try await put(forged, flower)
                #expect(refused.status == 400, "\(forged): \(refused.status)")
                #expect((try? refused.json())?["error"] as? String == "InvalidSignature", "\(forged)")
            }
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(ana.uuidString)/later.jpg", user: ana).body) == aqua)

            // A name in use is signed only to be replaced; nobody signs under another's id.
            #expect(try await sign("\(ana.uuidString)/later.jpg", ana, false).status == 409)
            let replacing = try #require(try await sign("\(ana.uuidString)/later.jpg", ana, true).json()["url"] as? String)
            #expect(try await put(replacing, flower).status == 200)
            #expect(Array(try await social.call(.get, "/storage/v1/object/posts/\(ana.uuidString)/later.jpg", user: ana).body) == flower)
            #expect(try await sign("\(ana.uuidString)/mine.jpg", ben, false).status == 403)
            #expect(try await social.call(.post, "/storage/v1/object/upload/sign/posts/\(ana.uuidString)/x.jpg", user: nil).status == 401)

            // Two hours; one made 90 minutes ago still works for a known account, not for an
            // account social no longer knows (erased after its tokens' hour of refusal).
            let links = StorageLinks(secret: Array(SocialHarness.mediaKey.utf8), bucket: .seconds(60), publicBase: "")
            let expired = links.signUpload(try ObjectPath(bucket: .posts, name: "\(ana.uuidString)/old.jpg"), upsert: false, now: Date() - 7_300)
            let expiredAnswer = try await put(expired.url, aqua)
            #expect(expiredAnswer.status == 400 && expiredAnswer.text.contains("expired"), "\(expiredAnswer.text)")
            let old = links.signUpload(try ObjectPath(bucket: .posts, name: "\(ana.uuidString)/old.jpg"), upsert: false, now: Date() - 5_400)
            #expect(try await put(old.url, aqua).status == 200)
            let stranger = UUID()
            let orphaned = links.signUpload(
                try ObjectPath(bucket: .posts, name: "\(stranger.uuidString)/old.jpg"),
                upsert: false,
                now: Date() - 5_400
            )
            #expect(try await put(orphaned.url, aqua).status == 403)

            // An account deleted after signing: its URL is refused at once.
            try await social.register(ben, username: "ben_\(ben.uuidString.prefix(6).lowercased())")
            let bens = try #require(try await sign("\(ben.uuidString)/later.jpg", ben, false).json()["url"] as? String)
            try await TestKafka.shared.publish([UserDeleted(userId: ben, deletedAt: Date())], source: "/splash/auth")
            try await social.waitFor("ben's profile erased") { try await social.count("profiles", where: "user_id = '\(ben.lowercased)'") == 0 }
            #expect(try await put(bens, aqua).status == 403)
            #expect(try await social.count("objects", where: "owner_id = '\(ben.lowercased)'") == 0)
            #expect(try await social.count("objects") == 2)
            #expect(try await social.count("blob_intents") == 0)
        }
    }

    /// A JPEG whose header declares `width`×`height` over a small picture.
    static func bomb(width: Int, height: Int) throws -> [UInt8] {
        var bytes = try SocialHarness.photo("FreshFlower")
        let sof = try #require((0..<bytes.count - 1).first { bytes[$0] == 0xFF && (bytes[$0 + 1] == 0xC0 || bytes[$0 + 1] == 0xC2) })
        bytes[sof + 5] = UInt8(height >> 8)
        bytes[sof + 6] = UInt8(height & 0xFF)
        bytes[sof + 7] = UInt8(width >> 8)
        bytes[sof + 8] = UInt8(width & 0xFF)
        return bytes
    }

    @Test func hostileUploadsAreRefusedCleanlyAndLeaveNothing() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let id = ana.uuidString
            let text = try await social.upload(Array("just some text, not a photo\n".utf8), name: "\(id)/note.jpg", user: ana)
            #expect(try text.status == 415 && text.json()["error"] as? String == "invalid_mime_type")
            let bombBytes = try Self.bomb(width: 10_000, height: 6_000)
            let bomb = try await social.upload(bombBytes, name: "\(id)/bomb.jpg", user: ana)
            #expect(bomb.status == 415 && bomb.text.contains("megapixels"))
            let flower = try SocialHarness.photo("FreshFlower")
            for path in [
                "\(id)/../\(UUID().uuidString)/x.jpg", "\(id)/a%2Fb.jpg", "\(id)/%2e%2e/x.jpg", "\(id)/.hidden.jpg", "\(id)//x.jpg",
                "not-a-user/x.jpg",
            ] {
                let response = try await social.call(.post, "/storage/v1/object/posts/\(path)", user: ana, bytes: flower)
                #expect(response.status == 400, "\(path): \(response.status) \(response.text)")
                #expect((try? response.json())?["error"] as? String == "InvalidKey", "\(path)")
            }
            let huge = [UInt8](repeating: 0xFF, count: 30 << 20)
            let tooLarge = try await social.upload(huge, name: "\(id)/huge.jpg", user: ana)
            #expect(tooLarge.status == 413, "\(tooLarge.text)")
            #expect(try await social.call(.post, "/storage/v1/object/sign/posts/\(id)/x.jpg", user: ana, json: "{oops").status == 400)
            #expect(try await social.call(.post, "/storage/v1/object/list/posts", user: ana, json: "[1,2]").status == 400)

            #expect(try await social.count("objects") == 0)
            #expect(try await social.count("blob_intents") == 0)
            #expect(social.blobFiles().isEmpty, "\(social.blobFiles())")
        }
    }
}
