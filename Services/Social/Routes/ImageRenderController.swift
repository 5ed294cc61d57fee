import Blobs
import Foundation
import HTTPTypes
import Hummingbird
import Imaging
import KeySetClient
import NIOCore
import ResourceAPI
import S3Blobs
import ServiceKit

/// `/storage/v1/render/image/…`: Supabase Storage's image transformations — a sized copy of an
/// object, `?width=&height=&resize=&quality=&format=`, through the object's read rules
/// (`authenticated`), from a public bucket (`public`), or through a signed link that carries the
/// transform and pins the object's version (`sign`). Variants are rendered once and kept
/// (`ImageVariants`, deleted with the object's blob by `ObjectStore.deleteBlob`); the answer is
/// WebP (or AVIF, with `STORAGE_RENDER_AVIF`) when the client accepts it and no format is asked.
/// With `S3_PRESIGN`, the first request renders through Splash and later ones are redirected to a
/// presigned GET of the kept variant.
struct ImageRenderController: Sendable {
    let objects: ObjectStore
    let variants: ImageVariants
    let links: StorageLinks
    let keys: KeySetCache
    /// `STORAGE_RENDER_AVIF`: AVIF for a client that accepts it.
    let rendersAVIF: Bool
    /// `S3_PRESIGN`: a kept variant is answered with a redirect to the bucket.
    let presigned: PresignedReads?

    static let prefix = "/storage/v1/render/image/"

    func addRoutes(to router: Router<AppRequestContext>) {
        for method in [HTTPRequest.Method.get, .head] {
            router.on("storage/v1/render/image/**", method: method, use: handle)
        }
    }

    @Sendable func handle(_ request: Request, context: AppRequestContext) async throws -> Response {
        let path = request.uri.path
        guard path.hasPrefix(Self.prefix) else { throw StorageError.notFound }
        let parts = path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count > 2 else { throw StorageError.notFound }
        let object = try ObjectPath(bucket: parts[1], rawName: Array(parts.dropFirst(2)))
        let query = request.uri.queryParameters
        switch parts[0] {
        case "authenticated":
            let user = try await keys.caller(request.headers).id
            guard let stored = try await objects.object(object, user: user) else { throw StorageError.notFound }
            let asked = try Self.asked(query)
            return try await answer(stored, asked, request: request, cacheControl: stored.cacheControl)
        case "public":
            let asked = try Self.asked(query)
            guard object.bucket.isPublic, let stored = try await objects.object(object) else { throw StorageError.notFound }
            return try await answer(stored, asked, request: request, cacheControl: stored.cacheControl)
        case "sign":
            let grant: StorageLinks.RenderGrant
            do throws(LinkRefusal) {
                grant = try links.verifyRender(object, token: query.get("token"))
            } catch {
                throw error == .expired ? StorageError.expiredSignature : StorageError.invalidSignature
            }
            // The link names one version: an object replaced since is not what it showed.
            guard let stored = try await objects.object(object), stored.version == grant.version else { throw StorageError.notFound }
            return try await answer(stored, grant.asked, request: request, cacheControl: "public, max-age=31536000, immutable")
        default:
            throw StorageError.notFound
        }
    }

    /// The transform a render URL asks for.
    /// - Throws: 400 `InvalidRequest` naming the first value out of range.
    static func asked(_ query: some Sequence<(key: Substring, value: Substring)>) throws -> TransformRequest {
        do throws(TransformRefusal) {
            return try TransformRequest(query: query, names: .storage)
        } catch {
            throw StorageError.invalidRequest(error.message)
        }
    }

    private func answer(_ object: StoredObject, _ asked: TransformRequest, request: Request, cacheControl: String) async throws -> Response {
        let transform = asked.transform(stored: object.mimeType, accept: request.headers[.accept], avif: rendersAVIF)
        var headers: HTTPFields = [
            .cacheControl: cacheControl, .contentType: transform.format.mediaType, .xContentTypeOptions: "nosniff",
            .eTag: ImageVariants.etag(of: object.blobKey, transform),
        ]
        if asked.format == nil { headers[.vary] = "Accept" }
        if EntityTag.matches(request.headers[.ifNoneMatch], headers[.eTag] ?? "") {
            return Response(status: .notModified, headers: headers)
        }
        if let presigned, let kept = try await variants.kept(of: object.blobKey, transform) {
            let link = presigned.link(kept, contentType: transform.format.mediaType, cacheControl: cacheControl)
            // The redirect is the caller's to keep while the link works, with a minute to spare.
            var redirect: HTTPFields = [.location: link.url, .cacheControl: "private, max-age=\(max(0, link.worksFor - 60))"]
            if asked.format == nil { redirect[.vary] = "Accept" }
            return Response(status: .found, headers: redirect)
        }
        let variant: [UInt8]?
        do {
            variant = try await variants.variant(of: object.blobKey, transform)
        } catch let error as ImagingError {
            throw StorageError.notAnImage("The object cannot be transformed: \(error.description)")
        }
        guard let variant else { throw StorageError.notFound }
        headers[.contentLength] = String(variant.count)
        return Response(
            status: .ok,
            headers: headers,
            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: variant))
        )
    }
}
