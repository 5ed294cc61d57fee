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
        group.post("posts") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            var request = request
            let bytes = Array(buffer: try await request.collectBody(upTo: context.maxUploadSize))
            let idempotency = try IdempotencyKey(request, body: bytes, what: "post")
            var body = try JSONObject(bytes)
            let caption = body.text("caption", required: false, maxCharacters: PostStore.maxCaption) ?? ""
            var photo: PhotoRef?
            if let value = body.fields["photo"], let data = try? JSONEncoder().encode(value) {
                photo = try? JSONDecoder().decode(PhotoRef.self, from: data)
            }
            if photo == nil {
                body.fail("photo", "photo: exactly one of {\"unsplashPhotoId\"}, {\"editId\"} or {\"objectKey\": \"posts/{your id}/…\"}")
            }
            try body.validate()
            return try IdempotencyKey.response(try await posts.create(photo!, caption: caption, user: user, idempotency: idempotency)) { post in
                try JSONBody.response(.created, post, headers: [.location: "/v1/posts/\(post.id.lowercased)"])
            }
        }
        group.get("posts/:id") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
                let post = try await posts.posts(.one(id), viewer: user, limit: 1).first
            else { throw PostStore.notFound }
            return try JSONBody.tagged(post, for: request)
        }
        group.delete("posts/:id") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw PostStore.notFound }
            try await posts.delete(id, user: user)
            return Response(status: .noContent)
        }
        group.get("posts") { request, _ in
            let user = try await keys.authenticatedUser(request.headers)
            guard let author = request.uri.queryParameters.get("author").flatMap(UUID.init(uuidString:)) else {
                throw Problem.validation([FieldError(.parameter("author"), "author: the user id whose posts to list")])
            }
            return try await page(request, user: user) { .author(author, after: $0) }
        }
        group.get("feed") { request, _ in
            let user = try await keys.authenticatedUser(request.headers)
            return try await page(request, user: user) { .feed(after: $0) }
        }
    }

    private func page(_ request: Request, user: UUID, selection: (PageCursor?) -> PostStore.Selection) async throws -> Response {
        let page = try PageRequest(request)
        let rows = try await posts.posts(selection(page.cursor), viewer: user, limit: page.limit + 1)
        let (items, next) = page.page(of: rows) { PageCursor(time: $0.createdAt, id: $0.id) }
        return try JSONBody.tagged(Page(items: Array(items), nextCursor: next), for: request)
    }
}
