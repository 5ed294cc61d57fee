import Blobs
import Foundation
import HTTPTypes
import Hummingbird
import Imaging
import KeySetClient
import NIOCore
import ResourceAPI
import ServiceKit

/// `/storage/v1/render/image/…`: Supabase Storage's image transformations — a sized copy of an
/// object, `?width=&height=&resize=&quality=&format=`, through the object's read rules
/// (`authenticated`), from a public bucket (`public`), or through a signed link that carries the
/// transform and pins the object's version (`sign`). Variants are rendered once and kept
/// (`ImageVariants`); the answer is WebP when the client accepts it and no format is asked.
struct ImageRenderController: Sendable {
    let objects: ObjectStore
    let variants: ImageVariants
    let links: StorageLinks
    let keys: KeySetCache

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
            let asked = try RenderRequest(query: query)
            return try await answer(stored, asked, request: request, cacheControl: stored.cacheControl)
        case "public":
            let asked = try RenderRequest(query: query)
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

    private func answer(_ object: StoredObject, _ asked: RenderRequest, request: Request, cacheControl: String) async throws -> Response {
        let transform = asked.transform(stored: object.mimeType, accept: request.headers[.accept])
        var headers: HTTPFields = [
            .cacheControl: cacheControl, .contentType: transform.format.mediaType, .xContentTypeOptions: "nosniff",
            .eTag: ImageVariants.etag(of: object.blobKey, transform),
        ]
        if asked.format == nil { headers[.vary] = "Accept" }
        if EntityTag.matches(request.headers[.ifNoneMatch], headers[.eTag] ?? "") {
            return Response(status: .notModified, headers: headers)
        }
        let variant: [UInt8]?
        do {
            variant = try await variants.variant(of: object, transform)
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

/// A transform as a request asks for it: sizes, resize, quality, and a format or none (then the
/// client's `Accept` chooses).
struct RenderRequest: Sendable, Hashable {
    var width: Int?
    var height: Int?
    var resize: ImageTransform.Resize
    var quality: Int
    /// `origin`: the stored format; `nil`: WebP when accepted, else the stored format.
    var format: String?

    init(width: Int? = nil, height: Int? = nil, resize: ImageTransform.Resize = .cover, quality: Int = 80, format: String? = nil) {
        self.width = width
        self.height = height
        self.resize = resize
        self.quality = quality
        self.format = format
    }

    /// From a render URL's query (or a sign request's `transform`, as text).
    /// - Throws: 400 `InvalidRequest` naming the first value out of range.
    init(query: some Sequence<(key: Substring, value: Substring)> & Sendable) throws {
        var fields: [Substring: Substring] = [:]
        for (key, value) in query { fields[key] = value }
        try self.init(fields: { fields[Substring($0)].map(String.init) })
    }

    init(fields: (String) -> String?) throws {
        func side(_ name: String) throws -> Int? {
            guard let text = fields(name) else { return nil }
            guard let value = Int(text), ImageTransform.sides.contains(value) else {
                throw StorageError.invalidRequest("\(name): a whole number of pixels from 1 to 2500")
            }
            return value
        }
        width = try side("width")
        height = try side("height")
        if let text = fields("resize") {
            guard let value = ImageTransform.Resize(rawValue: text) else { throw StorageError.invalidRequest("resize: cover, contain or fill") }
            resize = value
        } else {
            resize = .cover
        }
        if let text = fields("quality") {
            guard let value = Int(text), ImageTransform.qualities.contains(value) else {
                throw StorageError.invalidRequest("quality: a whole number from 20 to 100")
            }
            quality = value
        } else {
            quality = 80
        }
        switch fields("format") {
        case nil: format = nil
        case "origin": format = "origin"
        // AVIF is not rendered here: asked for, the client's Accept chooses as if none were asked.
        case "avif": format = nil
        default: throw StorageError.invalidRequest("format: origin, or none to let Accept choose")
        }
    }

    /// The transform to render for an object stored as `stored` (its media type).
    func transform(stored: String, accept: String?) -> ImageTransform {
        let origin: ImageTransform.Format =
            switch stored {
            case "image/png": .png
            case "image/webp": .webp
            default: .jpeg
            }
        let format: ImageTransform.Format =
            if self.format == nil, let accept, accept.lowercased().contains("image/webp") { .webp } else { origin }
        return ImageTransform(width: width, height: height, resize: resize, quality: quality, format: format)
    }

    /// `w200-h0-cover-q80-auto`: what a signed render link signs and carries.
    var signed: String { "w\(width ?? 0)-h\(height ?? 0)-\(resize.rawValue)-q\(quality)-\(format ?? "auto")" }

    init?(signed text: Substring) {
        let parts = text.split(separator: "-")
        guard parts.count == 5, parts[0].hasPrefix("w"), parts[1].hasPrefix("h"), parts[3].hasPrefix("q"),
            let width = Int(parts[0].dropFirst()), let height = Int(parts[1].dropFirst()), let quality = Int(parts[3].dropFirst()),
            let resize = ImageTransform.Resize(rawValue: String(parts[2])), parts[4] == "auto" || parts[4] == "origin"
        else { return nil }
        self.init(
            width: width == 0 ? nil : width,
            height: height == 0 ? nil : height,
            resize: resize,
            quality: quality,
            format: parts[4] == "auto" ? nil : "origin"
        )
    }
}
