import Contracts
import Foundation
import Hummingbird
import KeySetClient
import ResourceAPI
import ServiceKit

/// `/v1/posts` and `/v1/feed`: posting a photo with a caption (`Idempotency-Key` required), a post,
/// deleting one's own, everyone's posts newest first, and one author's.
struct PostsController: Sendable {
    let posts: PostStore
    let keys: KeySetCache

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("posts", use: create)
            .get("posts/:id", use: show)
            .delete("posts/:id", use: delete)
            .get("posts", use: byAuthor)
            .get("feed", use: feed)
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        var request = request
        let (new, key) = try await request.decodeCreation(as: NewPost.self, what: "post", context: context)
        return try IdempotencyKey.response(try await posts.create(new.photo, caption: new.caption, user: caller.id, idempotency: key)) { post in
            try JSONBody.response(.created, PostBody(post), headers: [.location: "/v1/posts/\(post.id.lowercased)"])
        }
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let id = try context.parameters.uuid("id", orThrow: PostStore.notFound)
        guard let post = try await posts.posts(.one(id), viewer: caller.id, limit: 1).first else { throw PostStore.notFound }
        return try JSONBody.tagged(PostBody(post), for: request)
    }

    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        try await posts.delete(try context.parameters.uuid("id", orThrow: PostStore.notFound), user: caller.id)
        return Response(status: .noContent)
    }

    @Sendable func byAuthor(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let named = request.uri.queryParameters.get("author")
        guard let author = named == "me" ? caller.id : named.flatMap(UUID.init(uuidString:)) else {
            throw Problem.validation([FieldError(.parameter("author"), "author: me, or the user id whose posts to list")])
        }
        guard author == caller.id else {
            if request.uri.queryParameters.get("since") != nil {
                throw Problem.validation([FieldError(.parameter("since"), "since: only your own posts (author=me) sync")])
            }
            return try await page(request, viewer: caller.id) { .author(author, after: $0) }
        }
        // One's own posts: the list an app keeps offline, with its sync token.
        let sync = try SyncRequest(request, list: "posts", owner: caller.id.lowercased)
        return try JSONBody.tagged(try await posts.authored(by: caller.id, sync: sync).map(PostBody.init), for: request)
    }

    @Sendable func feed(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        return try await page(request, viewer: caller.id) { .feed(after: $0) }
    }

    private func page(_ request: Request, viewer: UUID, selection: (PageCursor?) -> PostStore.Selection) async throws -> Response {
        let page = try PageRequest(request)
        let rows = try await posts.posts(selection(page.cursor), viewer: viewer, limit: page.limit + 1)
        let (items, next) = page.page(of: rows) { PageCursor(time: $0.createdAt, id: $0.id) }
        return try JSONBody.tagged(Page(items: items.map(PostBody.init), nextCursor: next), for: request)
    }
}

/// A new post: its photo and caption.
struct NewPost: JSONObjectBody {
    var photo: PhotoRef
    var caption: String

    init(reading body: inout JSONObject) throws {
        let caption = body.text("caption", required: false, maxCharacters: PostStore.maxCaption) ?? ""
        var photo: PhotoRef?
        if let value = body.fields["photo"], let data = try? JSONEncoder().encode(value) {
            photo = try? JSONDecoder().decode(PhotoRef.self, from: data)
        }
        if photo == nil { body.fail("photo", "photo: exactly one of {\"unsplashPhotoId\"}, {\"editId\"} or {\"objectKey\": \"posts/{your id}/…\"}") }
        self.photo = try body.validated(photo)
        self.caption = caption
    }
}
