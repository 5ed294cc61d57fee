import Blobs
import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Imaging
import KeySetClient
import NIOCore
import ResourceAPI
import ServiceKit

/// `/v1/filters`, `/v1/edits`, `/v1/edits/preview`: the filter catalog, live previews, and a
/// user's saved edits. Every route but the catalog needs the user's access token.
struct EditsController: Sendable {
    let store: EditStore
    let sources: SourceFetcher
    let renderer: Renderer
    let links: MediaLinks
    let keys: KeySetCache
    let metrics: RenderMetrics

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("filters", use: filters)
            .post("edits/preview", use: preview)
            .post("edits", use: create)
            .get("edits", use: list)
            .get("edits/:id", use: show)
            .delete("edits/:id", use: delete)
    }

    @Sendable func filters(_ request: Request, context: AppRequestContext) async throws -> Response {
        try JSONBody.response(.ok, FiltersBody(filters: FilterCatalog.all))
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        guard let edit = try await store.edit(try context.parameters.uuid("id", orThrow: .editNotFound), user: caller.id) else {
            throw Problem.editNotFound
        }
        return try JSONBody.tagged(EditBody(edit, links: links), for: request)
    }

    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        guard let edit = try await store.delete(try context.parameters.uuid("id", orThrow: .editNotFound), user: caller.id) else {
            throw Problem.editNotFound
        }
        if let key = edit.result.flatMap({ BlobKey(mediaPath: $0.key) }) {
            try? await ImageVariants.deleteImage(key, in: sources.blobs)
        }
        return Response(status: .noContent)
    }

    // MARK: Create

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        var request = request
        let body = Array(buffer: try await request.collectBody(upTo: context.maxUploadSize))
        let key = try IdempotencyKey(request, body: body, what: "edit")
        let (edit, _) = try await validated(body, user: user, maxEdge: OutputRules.maxLongestEdge, defaultEdge: 1080)
        return try IdempotencyKey.response(try await store.create(edit, idempotency: key)) { edit in
            try JSONBody.response(.accepted, EditBody(edit, links: links))
        }
    }

    /// The edit a body describes, after every check a render would make: the JSON's shape, the
    /// filters (422 naming the field), the output, and that an upload belongs to the user.
    private func validated(_ body: [UInt8], user: UUID, maxEdge: Int, defaultEdge: Int) async throws -> (Edit, FilterChain) {
        let request: EditRequest
        try JSONObject.refuseNUL(body)
        do {
            request = try JSONDecoder().decode(EditRequest.self, from: Data(body))
        } catch {
            throw Problem.validation([
                FieldError(
                    .body(pointer: ""),
                    "expected {\"source\": {\"unsplashPhotoId\"} or {\"uploadId\"}, \"filters\": [...], \"output\": {...}}"
                )
            ])
        }
        let chain: FilterChain
        do throws(FilterValidationError) {
            chain = try FilterChain(request.filters)
        } catch {
            throw Problem.validation([
                FieldError(
                    .body(
                        pointer: "/"
                            + error.field.replacingOccurrences(of: "[", with: "/").replacingOccurrences(of: "]", with: "").replacingOccurrences(
                                of: ".",
                                with: "/"
                            )
                    ),
                    "\(error.field): \(error.message)"
                )
            ])
        }
        let edge = request.output?.longestEdge ?? defaultEdge
        guard (16...maxEdge).contains(edge) else {
            throw Problem.validation([
                FieldError(.body(pointer: "/output/longestEdge"), "output.longestEdge: must be between 16 and \(maxEdge), got \(edge)")
            ])
        }
        var original: Edit.Original?
        switch request.source {
        case .upload(let id):
            guard let upload = try await store.upload(id, user: user) else {
                throw Problem.validation([FieldError(.body(pointer: "/source/uploadId"), "source.uploadId: no upload \(id.lowercased) of yours")])
            }
            original = .upload(
                UploadedOriginal(key: upload.key, format: upload.format, width: upload.width, height: upload.height, bytes: upload.bytes)
            )
        case .unsplashPhoto(let id):
            guard UnsplashPhotoID.isValid(id) else {
                throw Problem.validation([FieldError(.body(pointer: "/source/unsplashPhotoId"), "source.unsplashPhotoId: not an Unsplash photo id")])
            }
        }
        let edit = Edit(
            id: UUID(),
            userID: user,
            source: request.source,
            original: original,
            filters: chain.steps,
            output: EditOutput(format: request.output?.format ?? .jpeg, longestEdge: edge),
            status: .queued,
            createdAt: Date()
        )
        return (edit, chain)
    }

    // MARK: Preview

    @Sendable func preview(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        var request = request
        let started = ContinuousClock.now
        let body = Array(buffer: try await request.collectBody(upTo: context.maxUploadSize))
        let (edit, chain) = try await validated(body, user: user, maxEdge: 400, defaultEdge: 400)
        let source: [UInt8]
        do throws(SourceError) {
            source = try await sources.fetch(edit.source, user: user, large: false).bytes
        } catch .permanent(let reason) {
            throw Problem(status: .unprocessableContent, type: "source-unusable", title: "The photo cannot be used", detail: reason)
        } catch .unavailable {
            throw Problem(
                status: .serviceUnavailable,
                type: "source-unavailable",
                title: "The photo is unavailable",
                detail: "The photo could not be fetched just now; try again.",
                headers: [.retryAfter: "2"]
            )
        }
        let rendered: RenderedImage
        do {
            rendered = try await renderer.render(source, filters: chain, output: .preview(longestEdge: edit.output.longestEdge))
        } catch let error as ImagingError {
            throw Problem(status: .unprocessableContent, type: "source-unusable", title: "The photo cannot be used", detail: error.description)
        }
        metrics.preview(started.duration(to: .now))
        return Response(
            status: .ok,
            headers: [.contentType: rendered.mediaType, .cacheControl: "private, no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: rendered.bytes))
        )
    }

    // MARK: List

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        let page = try await store.edits(of: user, sync: try SyncRequest(request, list: "edits", owner: user.lowercased))
        let listed = page.map { EditBody($0, links: links) }
        return try JSONBody.tagged(EditPage(page: listed), as: listed, for: request)
    }
}

extension Problem {
    static let editNotFound = Problem(status: .notFound, type: "not-found", title: "Not found", detail: "No such edit of yours.")
}
