import Foundation
import Hummingbird
import KeySetClient
import ResourceAPI
import ServiceKit

/// `/v1/likes`: liking and unliking photos (idempotent), a photo's count and whether the caller
/// likes it, and "My Collection" (the caller's likes, newest first, with each photo's data).
struct LikesController: Sendable {
    let likes: LikeStore
    let keys: KeySetCache

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.put("likes/:photoKey", use: like)
            .delete("likes/:photoKey", use: unlike)
            .get("likes/:photoKey", use: state)
            .get("likes", use: list)
    }

    @Sendable func like(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let key = try PhotoKey.parameter(context.parameters.get("photoKey"))
        let (changed, state) = try await likes.like(key, user: caller.id)
        return try JSONBody.response(changed ? .created : .ok, LikeStateBody(photoKey: key.description, count: state.count, likedByMe: true))
    }

    @Sendable func unlike(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        _ = try await likes.unlike(try PhotoKey.parameter(context.parameters.get("photoKey")), user: caller.id)
        return Response(status: .noContent)
    }

    @Sendable func state(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let key = try PhotoKey.parameter(context.parameters.get("photoKey"))
        let state = try await likes.state(key, user: caller.id)
        return try JSONBody.tagged(LikeStateBody(photoKey: key.description, count: state.count, likedByMe: state.likedByMe), for: request)
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let page = try await likes.liked(by: caller.id, sync: try SyncRequest(request, list: "likes", owner: caller.id.lowercased))
        return try JSONBody.tagged(page.map(LikedPhotoBody.init), for: request)
    }
}
