import Contracts
import Foundation
import Imaging
import TestSupport
import Testing

@Suite("Posts and the feed") struct PostsTests {
    @Test func anUnsplashPhotoIsPostedOnceHotlinkedAndReplayedForItsKey() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            try await social.register(ana, username: "ana")
            let body = #"{"photo":{"unsplashPhotoId":"Aqua-5"},"caption":"Blue hour"}"#
            let created = try await social.post(body, user: ana, key: "post-1")
            #expect(created.status == 201, "\(created.text)")
            let post = try created.json()
            let id = try #require(post["id"] as? String)
            #expect((post["author"] as? [String: Any])?["username"] as? String == "ana")
            #expect(post["caption"] as? String == "Blue hour" && post["likeCount"] as? Int == 0 && post["likedByMe"] as? Bool == false)
            #expect(post["photoKey"] as? String == "unsplash:Aqua-5")
            let media = try #require(post["media"] as? [String: Any])
            #expect((media["url"] as? String)?.hasSuffix("/images/Aqua.jpg?regular") == true, "hotlinked, never re-hosted")
            #expect(media["width"] as? Int == 1080 && media["height"] as? Int == 675 && media["expiresAt"] is NSNull)
            #expect(social.catalog.reports == ["Aqua-5 \(ana.uuidString.lowercased())"])

            let replay = try await social.post(body, user: ana, key: "post-1")
            #expect(replay.status == 201 && replay.headers["idempotent-replayed"] == "true")
            #expect(try replay.json()["id"] as? String == id)
            let reused = try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-6"},"caption":"Other"}"#, user: ana, key: "post-1")
            #expect(reused.status == 422 && reused.text.contains("idempotency-key-reused"))
            let keyless = try await social.call(.post, "/v1/posts", user: ana, json: body)
            #expect(keyless.status == 422 && keyless.text.contains("Idempotency-Key"))
            #expect(try await social.count("posts") == 1)

            let read = try await social.call(.get, "/v1/posts/\(id)", user: UUID())
            #expect(read.status == 200)
            let tag = try #require(read.headers["etag"])
            #expect(try await social.call(.get, "/v1/posts/\(id)", user: UUID(), headers: [("If-None-Match", tag)]).status == 304)
            #expect(try await social.published(by: ana).map(\.type) == ["social.post.created.v1"])
        }
    }

    @Test func aCaptionOf2200EmojiWithModifiersIsAcceptedAnd2201Refused() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let emoji = ["👍🏽", "👩🏾‍💻", "🇫🇮", "👨‍👩‍👧‍👦", "✋🏻"]
            let long = (0..<2_200).map { emoji[$0 % emoji.count] }.joined()
            #expect(long.count == 2_200 && long.unicodeScalars.count > 2_200)
            func body(_ caption: String) -> String {
                String(
                    decoding: try! JSONSerialization.data(withJSONObject: ["photo": ["unsplashPhotoId": "Aqua-1"], "caption": caption]),
                    as: UTF8.self
                )
            }
            let accepted = try await social.post(body(long), user: ana)
            #expect(accepted.status == 201)
            #expect(try accepted.json()["caption"] as? String == long)
            let refused = try await social.post(body(long + "👍🏽"), user: ana)
            #expect(refused.status == 422)
            let problem = try refused.json()
            #expect((problem["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "#/caption")
            #expect(try await social.count("posts") == 1)
        }
    }

    @Test func anUploadIsPostedMadeToFitAttachedAndDeletedAfterItsPost() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let name = "\(ana.uuidString)/beach.jpg"
            #expect(try await social.upload(try SocialHarness.photo("Aqua"), name: name, user: ana).status == 200)
            #expect(try await social.count("objects", where: "state = 'pending'") == 1)

            // Ben cannot post Ana's upload.
            #expect(try await social.post(#"{"photo":{"objectKey":"posts/\#(name)"}}"#, user: ben).status == 403)
            let created = try await social.post(#"{"photo":{"objectKey":"posts/\#(name)"},"caption":"Sand"}"#, user: ana)
            #expect(created.status == 201, "\(created.text)")
            let post = try created.json()
            let id = try #require(post["id"] as? String)
            #expect(post["photoKey"] as? String == "post:\(id)")
            let media = try #require(post["media"] as? [String: Any])
            // 2560×1600 is larger than 1080 px: re-encoded before the post was recorded.
            #expect(media["width"] as? Int == 1080 && media["height"] as? Int == 675)
            let url = try #require(media["url"] as? String)
            #expect(url.hasPrefix("https://splash.test/storage/v1/object/sign/posts/"))
            let image = try await social.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil)
            #expect(image.status == 200 && image.headers["content-type"] == "image/jpeg")
            let header = try SourceInspection.inspect(Array(image.body), limits: SourceLimits())
            #expect(header.width == 1080 && header.height == 675 && image.body.count <= 2 << 20)
            #expect(try await social.count("objects", where: "state = 'attached' AND width = 1080") == 1)

            // Posted once: a second post of it, or removing it from storage, is refused.
            #expect(try await social.post(#"{"photo":{"objectKey":"posts/\#(name)"}}"#, user: ana).status == 409)
            let removed = try await social.call(.delete, "/storage/v1/object/posts", user: ana, json: #"{"prefixes":["\#(name)"]}"#)
            #expect(removed.status == 200 && removed.text == "[]")
            // Only its author deletes it; its object goes after it.
            #expect(try await social.call(.delete, "/v1/posts/\(id)", user: ben).status == 403)
            #expect(try await social.call(.delete, "/v1/posts/\(UUID().uuidString)", user: ana).status == 404)
            #expect(try await social.call(.delete, "/v1/posts/\(id)", user: ana).status == 204)
            #expect(try await social.count("posts") == 0)
            #expect(try await social.count("objects") == 0)
            #expect(try await social.count("blob_intents") == 0)
            #expect(social.blobFiles().isEmpty, "\(social.blobFiles())")
            #expect(try await social.call(.get, String(url.dropFirst("https://splash.test".count)), user: nil).status == 404)
            #expect(try await social.published(by: ana).map(\.type) == ["social.post.created.v1", "social.post.deleted.v1"])
        }
    }

    @Test func anEditIsPostedByItsOwnerAsACopyThatOthersCanThenLike() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let edit = try await social.completedEdit(of: ana)
            #expect(try await social.post(#"{"photo":{"editId":"\#(edit.uuidString)"}}"#, user: ben).status == 422)
            let created = try await social.post(#"{"photo":{"editId":"\#(edit.uuidString)"},"caption":"Mine"}"#, user: ana)
            #expect(created.status == 201, "\(created.text)")
            // 1600 px wide: made to fit, as a copy of social's own.
            #expect((try created.json()["media"] as? [String: Any])?["width"] as? Int == 1080)
            #expect(try await social.count("objects", where: "state = 'attached' AND name LIKE '\(ana.uuidString.lowercased())/post-%'") == 1)

            // Posted, the edit can be liked by anyone; the feed counts it.
            #expect(try await social.call(.put, "/v1/likes/edit:\(edit.uuidString)", user: ben).status == 201)
            let feed = try await social.call(.get, "/v1/feed", user: ben).json()
            let item = try #require((feed["items"] as? [[String: Any]])?.first)
            #expect(item["likeCount"] as? Int == 1 && item["likedByMe"] as? Bool == true)
            let hers = try await social.call(.get, "/v1/feed", user: ana).json()
            #expect((hers["items"] as? [[String: Any]])?.first?["likedByMe"] as? Bool == false)
        }
    }

    @Test func theFeedPagesNewestFirstAndShowsTheAuthorsCurrentName() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            try await social.register(ana, username: "ana")
            try await social.register(ben, username: "ben")
            var ids: [String] = []
            for (user, caption) in [(ana, "one"), (ben, "two"), (ana, "three"), (ben, "four"), (ana, "five")] {
                ids.append(
                    try #require(
                        try await social.post(#"{"photo":{"unsplashPhotoId":"Storm-1"},"caption":"\#(caption)"}"#, user: user).json()["id"] as? String
                    )
                )
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await social.call(.get, "/v1/feed?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), user: ben).json()
                seen += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["caption"] as? String }
                cursor = page["nextCursor"] as? String
            } while cursor != nil
            #expect(seen == ["five", "four", "three", "two", "one"])
            let hers = try await social.call(.get, "/v1/posts?author=\(ana.uuidString)", user: ben).json()
            #expect((hers["items"] as? [[String: Any]])?.compactMap { $0["caption"] as? String } == ["five", "three", "one"])
            #expect(try await social.call(.get, "/v1/posts", user: ben).status == 422)
            #expect(try await social.call(.get, "/v1/feed?limit=0", user: ben).status == 422)

            // A rename shows on the old posts, from the projection: no call to auth.
            try await TestKafka.shared.publish(
                [
                    ProfileUpdated(
                        userId: ana,
                        username: "ana_b",
                        avatarUrl: "https://a.test/ana.png",
                        changed: [.username, .avatarUrl],
                        updatedAt: Date()
                    )
                ],
                source: "/splash/auth"
            )
            let first = ids[0]
            try await social.waitFor("the rename") {
                let old = try await social.call(.get, "/v1/posts/\(first)", user: ben).json()
                return (old["author"] as? [String: Any])?["username"] as? String == "ana_b"
            }
            let old = try await social.call(.get, "/v1/posts/\(ids[0])", user: ben).json()
            #expect((old["author"] as? [String: Any])?["avatarUrl"] as? String == "https://a.test/ana.png")
        }
    }
}
