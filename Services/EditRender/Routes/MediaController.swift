import Blobs
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceKit

/// `GET /v1/media/<key>?expires=…&signature=…`: a private blob through its signed URL. An expired
/// or altered URL gets 403; a blob that no longer exists, 404.
struct MediaController: Sendable {
    let blobs: any BlobStore
    let links: MediaLinks

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("media/**", use: media)
    }

    @Sendable func media(_ request: Request, context: AppRequestContext) async throws -> Response {
        let path = context.parameters.getCatchAll().joined(separator: "/")
        let query = request.uri.queryParameters
        let key: BlobKey
        do throws(LinkRefusal) {
            key = try links.verify(path: path, expires: query.get("expires"), signature: query.get("signature"))
        } catch {
            let detail =
                error == .expired ? "This media link has expired; ask for the edit again for a fresh one." : "This media link is not valid."
            throw Problem(status: .forbidden, type: "media-link-invalid", title: "Media link refused", detail: detail)
        }
        // Passed on as it is read: a 25 MB original is never held whole.
        guard let blob = try await blobs.open(key) else {
            throw Problem(status: .notFound, type: "not-found", title: "Not found", detail: "The image no longer exists.")
        }
        let type = ["png", "webp", "heif", "avif"].first { path.hasSuffix(".\($0)") }.map { "image/\($0)" } ?? "image/jpeg"
        let body = ResponseBody(contentLength: blob.size) { writer in
            for try await chunk in blob.chunks { try await writer.write(chunk) }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [.contentType: type, .cacheControl: "private, max-age=300", .xContentTypeOptions: "nosniff"],
            body: body
        )
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
