import Foundation
import TestSupport
import Testing

@Suite("Collections") struct CollectionsTests {
    @Test func aPrivateCollectionIsItsOwnersAloneAndAPublicOneIsReadOnlyToOthers() async throws {
        try await SocialHarness.with { social in
            let (ana, ben) = (UUID(), UUID())
            let secret = try await social.call(.post, "/v1/collections", user: ana, json: #"{"title":"Mine","private":true}"#)
            #expect(secret.status == 201)
            let secretID = try #require(try secret.json()["id"] as? String)
            #expect(try secret.json()["description"] as? String == "")
            let shared = try await social.call(
                .post,
                "/v1/collections",
                user: ana,
                json: #"{"title":"Flowers 🌼","description":"In bloom","private":false}"#
            )
            let sharedID = try #require(try shared.json()["id"] as? String)

            // Ben: the private one is not there at all; the public one reads but does not change.
            #expect(try await social.call(.get, "/v1/collections/\(secretID)", user: ben).status == 404)
            #expect(try await social.call(.get, "/v1/collections/\(secretID)/photos", user: ben).status == 404)
            #expect(try await social.call(.patch, "/v1/collections/\(secretID)", user: ben, json: #"{"title":"Ha"}"#).status == 404)
            #expect(try await social.call(.delete, "/v1/collections/\(secretID)", user: ben).status == 404)
            #expect(try await social.call(.get, "/v1/collections/\(sharedID)", user: ben).json()["title"] as? String == "Flowers 🌼")
            #expect(try await social.call(.patch, "/v1/collections/\(sharedID)", user: ben, json: #"{"title":"Ha"}"#).status == 403)
            #expect(try await social.call(.put, "/v1/collections/\(sharedID)/photos/unsplash:Aqua-1", user: ben).status == 403)
            let bensView = try await social.call(.get, "/v1/collections?owner=\(ana.uuidString)", user: ben).json()
            #expect((bensView["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [sharedID])
            let anasView = try await social.call(.get, "/v1/collections?owner=me", user: ana).json()
            #expect((anasView["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [sharedID, secretID])

            // Ana changes and deletes her own.
            let renamed = try await social.call(.patch, "/v1/collections/\(secretID)", user: ana, json: #"{"title":"Still mine","private":false}"#)
            #expect(try renamed.json()["title"] as? String == "Still mine" && renamed.json()["private"] as? Bool == false)
            #expect(try await social.call(.get, "/v1/collections/\(secretID)", user: ben).status == 200)
            #expect(try await social.call(.delete, "/v1/collections/\(secretID)", user: ana).status == 204)
            #expect(try await social.call(.get, "/v1/collections/\(secretID)", user: ana).status == 404)
            #expect(
                try await social.published(by: ana).compactMap { event -> String? in
                    (try? JSONSerialization.jsonObject(with: Data(event.data)) as? [String: Any])?["change"] as? String
                } == ["created", "created", "updated", "deleted"]
            )
        }
    }

    @Test func photosListInTheOrderAddedAcrossPagesAndChangesAreIdempotent() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let id = try #require(
                try await social.call(.post, "/v1/collections", user: ana, json: #"{"title":"Order","private":true}"#).json()["id"] as? String
            )
            let keys = ["unsplash:Storm-3", "unsplash:Aqua-1", "unsplash:FreshFlower-9", "unsplash:Aqua-2", "unsplash:Storm-1"]
            for key in keys {
                #expect(try await social.call(.put, "/v1/collections/\(id)/photos/\(key)", user: ana).status == 201)
            }
            #expect(try await social.call(.put, "/v1/collections/\(id)/photos/unsplash:Aqua-1", user: ana).status == 204)
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await social.call(.get, "/v1/collections/\(id)/photos?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""), user: ana)
                    .json()
                seen += (page["items"] as? [[String: Any]] ?? []).compactMap { $0["photoKey"] as? String }
                cursor = page["nextCursor"] as? String
            } while cursor != nil
            #expect(seen == keys)
            #expect(try await social.call(.get, "/v1/collections/\(id)", user: ana).json()["photoCount"] as? Int == 5)

            #expect(try await social.call(.delete, "/v1/collections/\(id)/photos/unsplash:Aqua-1", user: ana).status == 204)
            #expect(try await social.call(.delete, "/v1/collections/\(id)/photos/unsplash:Aqua-1", user: ana).status == 204)
            #expect(
                try await social.count(
                    "outbox",
                    where: "type = 'social.collection.changed.v1' AND convert_from(payload, 'UTF8')::jsonb->>'change' = 'added'"
                ) == 5
            )
            #expect(
                try await social.count(
                    "outbox",
                    where: "type = 'social.collection.changed.v1' AND convert_from(payload, 'UTF8')::jsonb->>'change' = 'removed'"
                ) == 1
            )
        }
    }

    @Test func badCollectionsAreRefusedNamingTheField() async throws {
        try await SocialHarness.with { social in
            let ana = UUID()
            let long = String(repeating: "👍🏽", count: 101)
            for (body, field) in [
                (#"{"private":true}"#, "title"), (#"{"title":"  ","private":true}"#, "title"), (#"{"title":"\#(long)","private":true}"#, "title"),
                (#"{"title":"a"}"#, "private"), (#"{"title":"a","private":"yes"}"#, "private"),
                (#"{"title":"a","private":true,"description":"\#(String(repeating: "x", count: 501))"}"#, "description"),
            ] {
                let response = try await social.call(.post, "/v1/collections", user: ana, json: body)
                #expect(response.status == 422, "\(body.prefix(60))")
                #expect(response.text.contains("/\(field)"), "\(response.text)")
            }
            #expect(try await social.call(.post, "/v1/collections", user: ana, json: "{not json").status == 400)
            // 100 emoji with a skin tone are 100 characters.
            #expect(
                try await social.call(
                    .post,
                    "/v1/collections",
                    user: ana,
                    json: #"{"title":"\#(String(repeating: "👍🏽", count: 100))","private":true}"#
                ).status == 201
            )
            #expect(try await social.count("collections") == 1)
        }
    }
}
