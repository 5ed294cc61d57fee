import Blobs
import Foundation
import HTTPTypes
import Hummingbird
import Imaging
import NIOCore
import ResourceAPI
import ServiceKit

/// `GET /v1/media/<key>?expires=…&signature=…`: a private blob through its signed URL. An expired
/// or altered URL gets 403; a blob that no longer exists, 404. With `w`, `h`, `fit`, `q` or
/// `format` beside the signature, a sized copy (Storage's transformations under these names),
/// rendered once and kept beside the blob.
struct MediaController: Sendable {
    let blobs: any BlobStore
    let links: MediaLinks
    let variants: ImageVariants

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
        let type = ["png", "webp", "heif", "avif"].first { path.hasSuffix(".\($0)") }.map { "image/\($0)" } ?? "image/jpeg"
        if TransformRequest.isAsked(in: query, names: .media) { return try await sized(key, stored: type, request: request) }
        // Passed on as it is read: a 25 MB original is never held whole.
        guard let blob = try await blobs.open(key) else {
            throw Problem(status: .notFound, type: "not-found", title: "Not found", detail: "The image no longer exists.")
        }
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

extension MediaController {
    /// The sized copy of `key` the query asks for; JPEG or, when accepted and no format is
    /// asked, WebP.
    private func sized(_ key: BlobKey, stored type: String, request: Request) async throws -> Response {
        let asked: TransformRequest
        do throws(TransformRefusal) {
            asked = try TransformRequest(query: request.uri.queryParameters, names: .media)
        } catch {
            throw Problem(status: .badRequest, type: "invalid-size", title: "Invalid size", detail: error.message)
        }
        let transform = asked.transform(stored: type, accept: request.headers[.accept])
        var headers: HTTPFields = [
            .contentType: transform.format.mediaType, .cacheControl: "private, max-age=300", .xContentTypeOptions: "nosniff",
            .eTag: ImageVariants.etag(of: key, transform),
        ]
        if asked.format == nil { headers[.vary] = "Accept" }
        if EntityTag.matches(request.headers[.ifNoneMatch], headers[.eTag] ?? "") {
            return Response(status: .notModified, headers: headers)
        }
        let bytes: [UInt8]?
        do {
            bytes = try await variants.variant(of: key, transform)
        } catch let error as ImagingError {
            throw Problem(status: .unprocessableContent, type: "unsupported-image", title: "Not an image Splash can size", detail: error.description)
        }
        guard let bytes else { throw Problem(status: .notFound, type: "not-found", title: "Not found", detail: "The image no longer exists.") }
        headers[.contentLength] = String(bytes.count)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
