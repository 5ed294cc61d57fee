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
        group.put("likes/:photoKey") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            let key = try PhotoKey.parameter(context.parameters.get("photoKey"))
            let (changed, state) = try await likes.like(key, user: user)
            return try JSONBody.response(changed ? .created : .ok, LikeStateBody(photoKey: key.description, count: state.count, likedByMe: true))
        }
        group.delete("likes/:photoKey") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            _ = try await likes.unlike(try PhotoKey.parameter(context.parameters.get("photoKey")), user: user)
            return Response(status: .noContent)
        }
        group.get("likes/:photoKey") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            let key = try PhotoKey.parameter(context.parameters.get("photoKey"))
            let state = try await likes.state(key, user: user)
            return try JSONBody.tagged(LikeStateBody(photoKey: key.description, count: state.count, likedByMe: state.likedByMe), for: request)
        }
        group.get("likes") { request, _ in
            let user = try await keys.authenticatedUser(request.headers)
            return try JSONBody.tagged(try await likes.liked(by: user, page: try PageRequest(request)), for: request)
        }
    }
}
