import Contracts
import Foundation
import HTTPTypes
import ResourceAPI
import TestSupport
import Testing
import Yams

@testable import Social

/// social's answers against `Services/Social/openapi.yaml`.
/// `make contract SERVICE=social` runs this suite alone.
@Suite("social contract")
struct ContractTests {
    static let contract = try! OpenAPIDocument(service: "Social")

    static func document() throws -> [String: Any] { try contract.load() }

    static func required(_ name: String) throws -> Set<String> { try contract.required(name) }

    @Test func everyDocumentedOperationIsServedAndErrorsHaveTheirPrefixsShape() async throws {
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        #expect(paths.count == 22)
        let operations = try Self.contract.operations()
        try await SocialHarness.with { social in
            let user = UUID()
            for (path, method) in operations {
                let concrete = path.replacingOccurrences(of: "{id}", with: UUID().uuidString).replacingOccurrences(
                    of: "{photoKey}",
                    with: "unsplash:missing-1"
                )
                .replacingOccurrences(of: "{bucket}", with: "posts").replacingOccurrences(of: "{name}", with: "\(user.uuidString)/none.jpg")
                let response = try await social.call(
                    HTTPRequest.Method(method.uppercased())!,
                    concrete,
                    user: user,
                    headers: [("Idempotency-Key", "contract")],
                    json: "{}"
                )
                #expect(response.status != 405 && response.status < 500, "\(method) \(path): \(response.status) \(response.text)")
                guard response.status >= 400, method != "head" else { continue }
                if path.hasPrefix("/storage") {
                    #expect(Set(try response.json().keys) == (try Self.required("StorageError")), "\(method) \(path)")
                } else {
                    #expect(response.headers["content-type"] == "application/problem+json", "\(method) \(path)")
                    #expect(Set(try response.json().keys).isSuperset(of: try Self.required("Problem")))
                }
            }
        }
    }

    @Test func schemathesisFindsNothingTheDocumentDoesNotPromise() async throws {
        try await SocialHarness.with { social in
            let report = try await Schemathesis(
                service: "Social",
                baseURL: social.app.baseURL,
                headers: [("Authorization", "Bearer \(try social.token(user: UUID()))")]
            ).run()
            #expect(report.passed, "\(report)")
        }
    }

    /// Every type social publishes, produced through its API and checked against its JSON Schema.
    @Test func everyEventItPublishesMatchesItsSchema() async throws {
        try await SocialHarness.with { social in
            let user = UUID()
            #expect(try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: user).status < 300)
            #expect(try await social.call(.delete, "/v1/likes/unsplash:Aqua-1", user: user).status == 204)
            let post = try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-1"},"caption":"schema"}"#, user: user).json()
            let postID = try #require(post["id"] as? String)
            // A post's like names its author (`ownerId`), checked against the schema too.
            #expect(try await social.call(.put, "/v1/likes/post:\(postID)", user: user).status == 201)
            #expect(try await social.call(.delete, "/v1/posts/\(postID)", user: user).status == 204)
            #expect(try await social.call(.post, "/v1/collections", user: user, json: #"{"title":"Schema","private":false}"#).status == 201)
            let events = try await social.published(by: user)
            #expect(
                Set(events.map(\.type))
                    == Set(
                        ([PhotoLiked.self, PhotoUnliked.self, PostCreated.self, PostDeleted.self, CollectionChanged.self] as [any DomainEvent.Type])
                            .map { $0.type }
                    )
            )
            let report = try await EventSchemaCheck.validate(events)
            #expect(report.contains("validated \(events.count) payload(s), 0 failure(s)"), "\(report)")
        }
    }

    /// Every type social consumes, replayed from its schema's example (with fresh ids) into a
    /// running social, has its effect; a type it does not consume is skipped and the partition
    /// flows on past it.
    @Test func everyEventItConsumesHasItsEffectFromItsSchemasExample() async throws {
        try await SocialHarness.with { social in
            var examples = EventExamples()
            let registered = try examples.example(UserRegistered.self)
            let updated = try examples.example(ProfileUpdated.self)
            let completed = try examples.example(EditCompleted.self)
            let user = registered.userId
            let edit = completed.editId
            #expect(updated.userId == user && completed.userId == user, "the examples name one user")
            try await TestKafka.shared.publish([registered, try examples.example(OnboardingCompleted.self), updated], source: "/splash/auth")
            try await TestKafka.shared.publish([try examples.example(EditFailed.self), completed], source: "/splash/edit-render")
            try await social.waitFor("the renamed profile") {
                try await social.count("profiles", where: "user_id = '\(user.lowercased)' AND username = '\(updated.username ?? "")'") == 1
            }
            try await social.waitFor("the completed edit") { try await social.count("edits", where: "edit_id = '\(edit.lowercased)'") == 1 }
        }
    }

    @Test func postsLikesCollectionsAndFilesHaveTheDocumentedShapes() async throws {
        try await SocialHarness.with { social in
            let user = UUID()
            let post = try await social.post(#"{"photo":{"unsplashPhotoId":"Aqua-1"},"caption":"c"}"#, user: user).json()
            #expect(Set(post.keys) == (try Self.required("Post")))
            #expect(Set((post["media"] as? [String: Any] ?? [:]).keys) == (try Self.required("Media")))
            let feed = try await social.call(.get, "/v1/feed", user: user).json()
            #expect(Set(feed.keys) == (try Self.required("PostPage")))
            let like = try await social.call(.put, "/v1/likes/unsplash:Aqua-1", user: user).json()
            #expect(Set(like.keys) == (try Self.required("LikeState")))
            let liked = try await social.call(.get, "/v1/likes", user: user).json()
            let item = try #require((liked["items"] as? [[String: Any]])?.first)
            #expect(Set(item.keys) == (try Self.required("LikedPhoto")))
            #expect(Set((item["photo"] as? [String: Any] ?? [:]).keys).isSuperset(of: try Self.required("Photo")))
            let collection = try await social.call(.post, "/v1/collections", user: user, json: #"{"title":"t","private":false}"#).json()
            #expect(Set(collection.keys) == (try Self.required("Collection")))
            #expect(try await social.upload(try SocialHarness.photo("FreshFlower"), name: "\(user.uuidString)/f.jpg", user: user).status == 200)
            let files = try await social.call(.post, "/storage/v1/object/list/posts", user: user, json: #"{"prefix":"\#(user.uuidString)"}"#)
            let file = try #require((try JSONSerialization.jsonObject(with: files.body) as? [[String: Any]])?.first)
            #expect(Set(file.keys).isSuperset(of: try Self.required("FileObject")))
            let info = try await social.call(.get, "/storage/v1/object/info/posts/\(user.uuidString)/f.jpg", user: user).json()
            #expect(Set(info.keys).isSuperset(of: try Self.required("ObjectInfo")))
        }
    }
}

/// The feed's bodies write their own JSON; it must be exactly what the encoder writes.
@Suite("Written JSON")
struct WrittenJSONTests {
    @Test func aPostPageWritesWhatTheEncoderWrites() throws {
        let tricky = "quote \" backslash \\ slash / newline \n tab \t bell \u{07} nul-ish \u{01} emoji 👩🏾‍💻 ñ \u{2028}"
        let posts = [
            PostBody(
                id: UUID(),
                author: .init(id: UUID(), username: tricky, avatarUrl: nil),
                photo: .unsplash("Aqua-1"),
                photoKey: "unsplash:Aqua-1",
                caption: tricky,
                media: MediaBody(url: "https://images.unsplash.com/a?w=1080&q=80", width: 1080, height: 720, expiresAt: nil),
                likeCount: 12,
                likedByMe: true,
                createdAt: Date(timeIntervalSince1970: 1_795_000_000.123456)
            ),
            PostBody(
                id: UUID(),
                author: .init(id: UUID(), username: nil, avatarUrl: "https://a.test/x.png"),
                photo: .object("posts/u/a b.jpg"),
                photoKey: "post:\(UUID().lowercased)",
                caption: "",
                media: MediaBody(
                    url: "https://s.test/storage/v1/object/sign/posts/u/a%20b.jpg?token=1.ab",
                    width: 1,
                    height: 2,
                    expiresAt: Date(timeIntervalSince1970: 1_795_000_300)
                ),
                likeCount: 0,
                likedByMe: false,
                createdAt: Date(timeIntervalSince1970: 0)
            ),
            PostBody(
                id: UUID(),
                author: .init(id: UUID(), username: "ana", avatarUrl: nil),
                photo: .edit(UUID()),
                photoKey: "edit:\(UUID().lowercased)",
                caption: "x",
                media: MediaBody(url: "u", width: 3, height: 4, expiresAt: nil),
                likeCount: Int.max,
                likedByMe: false,
                createdAt: Date(timeIntervalSince1970: -1.5)
            ),
        ]
        for page in [Page(items: posts, nextCursor: PageCursor(time: Date(), key: "k")), Page(items: [], nextCursor: nil)] {
            var writer = JSONWriter()
            page.write(to: &writer)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: try EventJSON.encoder.encode(page), as: UTF8.self))
        }
    }
}
