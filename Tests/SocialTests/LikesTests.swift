import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@Suite("Likes") struct LikesTests {
    @Test func aLikeIsIdempotentCountedForEveryoneAndPublishedOncePerChange() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let first = try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: ana)
            #expect(first.status == 201)
            #expect(try first.json()["count"] as? Int == 1)
            let again = try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: ana)
            #expect(again.status == 200)
            #expect(try again.json()["count"] as? Int == 1)

            let seenByBen = try await social.call(.get, "/v1/likes/unsplash:Aqua-1", user: ben).json()
            #expect(seenByBen["count"] as? Int == 1 && seenByBen["likedByMe"] as? Bool == false)
            #expect(try await social.call(.get, "/v1/likes/unsplash:Aqua-1", user: ana).json()["likedByMe"] as? Bool == true)

            #expect(try await social.call(.delete, "/v1/likes/unsplash:Aqua-1", user: ana).status == 204)
            #expect(try await social.call(.delete, "/v1/likes/unsplash:Aqua-1", user: ana).status == 204)
            #expect(try await social.call(.get, "/v1/likes/unsplash:Aqua-1", user: ana).json()["count"] as? Int == 0)

            let events = try await social.published(by: ana)
            #expect(events.map(\.type) == ["social.photo.liked.v1", "social.photo.unliked.v1"])
            #expect(events.first.map { String(decoding: $0.data, as: UTF8.self).contains("\"photoId\":\"unsplash:Aqua-1\"") } == true)
            // The first like reported a use of the photo to photo-catalog, once.
            #expect(social.catalog.reports == ["Aqua-1 \(ana.uuidString.lowercased())"])
        }
    }

    @Test func fiftyUsersTogglingOnePhotoAtOnceEndWithTheExactCountAndOneEventPerChange() async throws {
        try await SocialHarness.with { social in
            let users = (0..<50).map { _ in UUID() }
            // Each user likes twice at once; every other one then takes the like back.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, user) in users.enumerated() {
                    group.addTask {
                        async let one = social.call(.put, "/v1/likes/unsplash:Storm-7", user: user)
                        async let two = social.call(.put, "/v1/likes/unsplash:Storm-7", user: user)
                        let statuses = [try await one.status, try await two.status].sorted()
                        #expect(statuses == [200, 201], "one like is new, the other finds it")
                        if index.isMultiple(of: 2) {
                            #expect(try await social.call(.delete, "/v1/likes/unsplash:Storm-7", user: user).status == 204)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await social.call(.get, "/v1/likes/unsplash:Storm-7", user: users[0]).json()["count"] as? Int == 25)
            #expect(try await social.count("likes", where: "photo_key = 'unsplash:Storm-7'") == 25)
            #expect(try await social.count("outbox", where: "type = 'social.photo.liked.v1'") == 50)
            #expect(try await social.count("outbox", where: "type = 'social.photo.unliked.v1'") == 25)
        }
    }

    @Test func myCollectionListsLikesNewestFirstWithEachPhotosData() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let edit = try await social.completedEdit(of: ana)
            for key in ["unsplash:Aqua-1", "edit:\(edit.uuidString)", "unsplash:Storm-2"] {
                #expect(try await social.call(.put, "/v1/likes/\(key)", user: ana).status == 201)
            }
            let first = try await social.call(.get, "/v1/likes?limit=2", user: ana)
            let page = try first.json()
            let items = try #require(page["items"] as? [[String: Any]])
            #expect(items.map { $0["photoKey"] as? String } == ["unsplash:Storm-2", "edit:\(edit.uuidString.lowercased())"])
            let unsplash = try #require(items[0]["photo"] as? [String: Any])
            #expect(((unsplash["unsplash"] as? [String: Any])?["user"] as? [String: Any])?["name"] as? String == "Test Photographer")
            let media = try #require((items[1]["photo"] as? [String: Any])?["media"] as? [String: Any])
            #expect(
                (media["url"] as? String)?.hasPrefix(
                    "https://splash.test/v1/media/\(ana.uuidString.lowercased())/\(edit.uuidString.lowercased())/edited.jpg?expires="
                ) == true
            )
            #expect(media["width"] as? Int == 1600)
            // Beside it, the edit's sizes for the list: the same media link with a size.
            let thumbnails = try #require((items[1]["photo"] as? [String: Any])?["thumbnails"] as? [String: String])
            #expect(thumbnails["small"] == "\(media["url"] as? String ?? "")&w=200&h=200")
            #expect(thumbnails["medium"] == "\(media["url"] as? String ?? "")&w=640")

            let cursor = try #require(page["nextCursor"] as? String)
            let rest = try await social.call(.get, "/v1/likes?limit=2&cursor=\(cursor)", user: ana).json()
            #expect((rest["items"] as? [[String: Any]])?.map { $0["photoKey"] as? String } == ["unsplash:Aqua-1"])
            #expect(rest["nextCursor"] is NSNull)

            // The page is tagged; the same page asked again with its tag is a 304.
            let tag = try #require(first.headers["etag"])
            #expect(try await social.call(.get, "/v1/likes?limit=2", user: ana, headers: [("If-None-Match", tag)]).status == 304)
        }
    }

    @Test func aPostsLikeNamesItsAuthorInTheEvent() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let post = try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-1"},"caption":"Sea"}"#, user: ana).json()
            let key = "post:\(try #require(post["id"] as? String))"
            #expect(try await social.call(.put, "/v1/likes/\(key)", user: ben).status == 201)
            #expect(try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: ben).status == 201)
            let liked = try await social.published(by: ben).filter { $0.type == PhotoLiked.type }.map { try $0.decode(PhotoLiked.self) }
            #expect(liked.map(\.photoId) == [key, "unsplash:Aqua-1"])
            #expect(liked.map(\.ownerId) == [ana, nil])
        }
    }

    @Test func onlyPhotosTheUserMayUseCanBeLiked() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let edit = try await social.completedEdit(of: ana)
            // Someone else's edit, not posted: not there for ben.
            let refused = try await social.call(.put, "/v1/likes/edit:\(edit.uuidString)", user: ben)
            #expect(refused.status == 404, "\(refused.text)")
            #expect(try await social.call(.put, "/v1/likes/unsplash:missing-photo", user: ana).status == 404)
            #expect(try await social.call(.put, "/v1/likes/post:\(UUID().uuidString)", user: ana).status == 404)
            for bad in ["flickr:abc", "edit:not-a-uuid", "unsplash:", "unsplash:a%2Fb"] {
                let response = try await social.call(.put, "/v1/likes/\(bad)", user: ana)
                #expect(response.status == 422, "\(bad)")
                #expect(response.text.contains("photoKey"))
            }
            #expect(try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: nil).status == 401)
            #expect(try await social.count("likes") == 0)
            // No event of Ana's (the outbox also holds acknowledgements of other tests' deletions).
            #expect(try await social.count("outbox", where: "key = '\(ana.lowercased)'") == 0)
        }
    }
}
