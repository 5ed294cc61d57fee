import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

/// A deleted user (`auth.user.deleted.v1`) is erased from social: every row and blob of theirs,
/// the like counts fallen with their likes, nothing of anyone else touched, and the erasure
/// acknowledged on `social.erasures` with what was removed.
@Suite("Erasing a deleted user from social")
struct ErasureTests {
    @Test func everythingOfTheDeletedUserGoesAndNothingOfAnyoneElse() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            try await social.register(ana, username: "ana_\(UUID().uuidString.prefix(6).lowercased())")
            try await social.register(ben, username: "ben_\(UUID().uuidString.prefix(6).lowercased())")
            let photo = try SocialHarness.photo("FreshFlower")

            // Ana: likes, a collection, an uploaded photo posted, an avatar, a pending upload, an edit.
            let bensPost = try #require(
                try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-1"},"caption":"Ben's"}"#, user: ben).json()["id"] as? String
            )
            for key in ["unsplash:Aqua-1", "post:\(bensPost)"] {
                #expect(try await social.call(.put, "/v1/likes/\(key)", user: ana).status == 201)
            }
            #expect(try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: ben).status == 201)
            #expect(try await social.call(.post, "/v1/collections", user: ana, json: #"{"title":"Mine","private":false}"#).status == 201)
            #expect(try await social.upload(photo, name: "\(ana.uuidString)/sand.jpg", user: ana).status == 200)
            let anasPost = try await social.post(#"{"photo":{"objectKey":"posts/\#(ana.uuidString)/sand.jpg"},"caption":"Sand"}"#, user: ana)
            #expect(anasPost.status == 201, "\(anasPost.text)")
            #expect(try await social.upload(photo, bucket: "avatars", name: "\(ana.uuidString)/me.jpg", user: ana).status == 200)
            #expect(try await social.upload(photo, name: "\(ana.uuidString)/later.jpg", user: ana).status == 200)
            _ = try await social.completedEdit(of: ana)
            #expect(try await social.call(.put, "/v1/likes/post:\(try #require(anasPost.json()["id"] as? String))", user: ben).status == 201)
            let bensObjects = try await social.count("objects", where: "owner_id = '\(ben.lowercased)'")
            let blobsBefore = social.blobFiles().count

            let deleted = UserDeleted(userId: ana, deletedAt: Date())
            try await TestKafka.shared.publish([deleted], source: "/splash/auth")
            try await social.waitFor("ana's profile erased") {
                try await social.count("profiles", where: "user_id = '\(ana.lowercased)'") == 0
            }
            for (table, column) in [
                ("likes", "user_id"), ("collections", "owner_id"), ("posts", "user_id"), ("objects", "owner_id"), ("edits", "user_id"),
            ] {
                #expect(try await social.count(table, where: "\(column) = '\(ana.lowercased)'") == 0, "\(table)")
            }
            // Ana's still-valid token is refused now; Ben's works.
            try await social.waitFor("ana's token refused") { try await social.call(.get, "/v1/likes", user: ana).status == 401 }
            #expect(try await social.call(.put, "/v1/likes/unsplash:Aqua-2", user: ana).status == 401)
            #expect(try await social.call(.get, "/v1/likes", user: ben).status == 200)
            // Ben's like of Aqua-1 is the one left; Ben's post lost Ana's like.
            #expect(try await social.count("like_counts", where: "photo_key = 'unsplash:Aqua-1' AND likes = 1") == 1)
            #expect(try await social.count("like_counts", where: "photo_key = 'post:\(bensPost)' AND likes = 0") == 1)
            #expect(try await social.count("posts", where: "user_id = '\(ben.lowercased)'") == 1)
            #expect(try await social.count("objects", where: "owner_id = '\(ben.lowercased)'") == bensObjects)
            #expect(try await social.count("profiles", where: "user_id = '\(ben.lowercased)'") == 1)
            // Ana's three objects' blobs are gone (the edit's blob is edit-render's to erase).
            try await social.waitFor("ana's blobs deleted") { social.blobFiles().count == blobsBefore - 3 }
            #expect(!social.blobFiles().contains { $0.contains("sand.jpg") || $0.contains("me.jpg") })

            let acknowledged = try await social.database.erasureAcknowledgements(SocialUserErased.self, of: ana, schema: "social")
            #expect(acknowledged.map(\.type) == [SocialUserErased.type])
            let erased = try EventJSON.decoder.decode(SocialUserErased.self, from: Data(try #require(acknowledged.first).data))
            #expect(erased.counts == ["likes": 2, "collections": 1, "posts": 1, "objects": 3, "edits": 1, "profiles": 1])
            let report = try await EventSchemaCheck.validate(acknowledged)
            #expect(report.contains("validated 1 payload(s), 0 failure(s)"), "\(report)")

            // The same deletion delivered again is applied once.
            let envelope = try #require(try await TestKafka.shared.events(on: TopicCatalog.authUsers.name, key: ana.lowercased).last)
            try await TestKafka.shared.publish([(envelope, TopicCatalog.authUsers.name)])
            try await Task.sleep(for: .seconds(2))
            try await social.database.waitUntilOutboxIsPublished(schema: "social")
            #expect(try await social.database.outboxEventIDs(schema: "social", type: SocialUserErased.type, key: ana.lowercased).count == 1)
        }
    }
}
