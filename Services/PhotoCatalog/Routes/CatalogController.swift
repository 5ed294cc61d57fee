import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import KeySetClient
import NIOCore
import ResourceAPI
import ServiceKit

/// Where answers come from: Unsplash behind the cache, or the offline fixture set.
enum PhotoSource: Sendable {
    case unsplash(CachedUnsplash)
    case fixtures(FixtureCatalog)

    func answer(_ request: UnsplashRequest) async throws(Problem) -> ServedAnswer {
        switch self {
        case .unsplash(let cached): try await cached.answer(request)
        case .fixtures(let fixtures): fixtures.answer(request)
        }
    }
}

/// The catalog's API under `/v1`: Unsplash's paths, parameters, JSON shapes and pagination
/// headers, plus `ETag`/`If-None-Match` and `Cache-Status`.
struct CatalogController: Sendable {
    let source: PhotoSource
    let downloads: DownloadTracker
    let keys: KeySetCache
    /// Other Splash services report a use with this secret and the user's id.
    let serviceToken: ServiceToken?
    /// `https://splash.example` without a trailing slash: pagination links point there.
    let publicBase: String

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("photos", use: list)
            .get("photos/random", use: random)
            .get("photos/:id", use: photo)
            .get("search/photos", use: search)
            .post("photos/:id/download", use: download)
        if case .fixtures = source {
            group.get("fixtures/:file", use: fixtureImage)
        }
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let query = try UnsplashRequest.list(QueryString(request.uri.query))
        return try await respond(to: request, with: source.answer(query), for: query)
    }

    @Sendable func random(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (pool, count) = try UnsplashRequest.random(QueryString(request.uri.query))
        return try await random(from: source.answer(pool), count: count, request: request)
    }

    @Sendable func photo(_ request: Request, context: AppRequestContext) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        guard let query = UnsplashRequest.photo(id: id) else { throw Problem.photoNotFound(id) }
        return try await respond(to: request, with: source.answer(query), for: query)
    }

    @Sendable func search(_ request: Request, context: AppRequestContext) async throws -> Response {
        let query = try UnsplashRequest.search(QueryString(request.uri.query))
        return try await respond(to: request, with: source.answer(query), for: query)
    }

    @Sendable func download(_ request: Request, context: AppRequestContext) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        guard UnsplashPhotoID.isValid(id) else { throw Problem.photoNotFound(id) }
        let user = try await caller(request.headers)
        let queued = try await downloads.record(user: user, photo: id)
        let body = try JSONSerialization.data(withJSONObject: ["photo_id": id, "queued": queued], options: [.sortedKeys])
        return Response(status: .accepted, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `GET /v1/fixtures/{file}`: an image of the offline fixture set.
    @Sendable func fixtureImage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = context.parameters.get("file") ?? ""
        guard case .fixtures(let fixtures) = source, let file = fixtures.imageFile(named: name),
            let data = FileManager.default.contents(atPath: file.path)
        else {
            throw Problem(status: .notFound, type: "not-found", title: "Not found", detail: "There is no fixture image \(name).")
        }
        let buffer = ByteBuffer(bytes: data)
        let etag = CachedAnswer.etag(of: buffer)
        var headers: HTTPFields = [.contentType: "image/jpeg", .eTag: etag, .cacheControl: "public, max-age=86400"]
        if EntityTag.matches(request.headers[.ifNoneMatch], etag) {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(buffer.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }

    // MARK: Answers

    private func respond(to request: Request, with served: ServedAnswer, for query: UnsplashRequest) throws -> Response {
        let answer = served.answer
        var headers: HTTPFields = [.cacheStatus: served.cacheStatus.headerValue]
        guard answer.status == 200 else {
            throw Problem.photoNotFound(query.photoID ?? "", headers: headers)
        }
        headers[.cacheControl] = cacheControl(served)
        if let page = query.page, let perPage = query.perPage {
            headers[.xPerPage] = String(perPage)
            if let total = answer.total {
                headers[.xTotal] = String(total)
                let pagination = Pagination(total: total, page: page, perPage: perPage)
                if let link = pagination.link(base: "\(publicBase)/v1/\(query.path)", parameters: query.parametersExceptPage) {
                    headers[.link] = link
                }
            }
        }
        return json(answer.body, etag: answer.etag, headers: headers, request: request)
    }

    /// `count` photos drawn from the pool (one object without `count`, as Unsplash does).
    private func random(from served: ServedAnswer, count: Int?, request: Request) throws -> Response {
        let pool = (try? JSONSerialization.jsonObject(with: Data(served.answer.body.readableBytesView)) as? [Any]) ?? []
        guard served.answer.status == 200, !pool.isEmpty else {
            throw Problem(
                status: .notFound,
                type: "no-photos",
                title: "No photos match",
                detail: "No photo matches these filters.",
                headers: [.cacheStatus: served.cacheStatus.headerValue]
            )
        }
        let drawn = Array(pool.shuffled().prefix(count ?? 1))
        let object: Any = count == nil ? drawn[0] : drawn
        let body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]))
        let headers: HTTPFields = [.cacheStatus: served.cacheStatus.headerValue, .cacheControl: "no-store"]
        return json(body, etag: CachedAnswer.etag(of: body), headers: headers, request: request)
    }

    private func json(_ body: ByteBuffer, etag: String, headers: HTTPFields, request: Request) -> Response {
        var headers = headers
        headers[.eTag] = etag
        if EntityTag.matches(request.headers[.ifNoneMatch], etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json"
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// Clients and shared caches may keep a fresh answer for what is left of its lifetime (at most
    /// an hour); stale ones not at all.
    private func cacheControl(_ served: ServedAnswer) -> String {
        switch served.cacheStatus {
        case .hit, .stored, .collapsed: "public, max-age=\(min(3_600, max(0, served.answer.ttl(at: Date()))))"
        case .fixtures: "public, max-age=300"
        case .staleWhileRevalidate, .staleIfError, .unavailable: "public, max-age=0, must-revalidate"
        }
    }

    // MARK: Callers

    /// The user a download is reported for: the bearer token's subject, or — for another Splash
    /// service holding the service token — the `X-Splash-User-Id` it names.
    private func caller(_ headers: HTTPFields) async throws(Problem) -> UUID {
        if let presented = headers[.splashServiceToken] {
            guard let serviceToken, serviceToken.matches(presented) else {
                throw Problem(
                    status: .unauthorized,
                    type: "invalid-service-token",
                    title: "Invalid service token",
                    detail: "The service token is not valid."
                )
            }
            guard let user = headers[.splashUserID].flatMap(UUID.init(uuidString:)) else {
                throw Problem.validation([FieldError(.header("X-Splash-User-Id"), "X-Splash-User-Id must be the user's id (a UUID)")])
            }
            return user
        }
        return try await keys.caller(headers).id
    }
}

extension Problem {
    static func photoNotFound(_ id: String, headers: HTTPFields = [:]) -> Problem {
        Problem(
            status: .notFound,
            type: "photo-not-found",
            title: "Photo not found",
            detail: "Unsplash has no photo with id \(id).",
            headers: headers
        )
    }
}

extension HTTPField.Name {
    static let cacheStatus = Self("Cache-Status")!
    static let xTotal = Self("X-Total")!
    static let xPerPage = Self("X-Per-Page")!
    static let link = Self("Link")!
}
