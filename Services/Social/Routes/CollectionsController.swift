import Foundation
import Hummingbird
import KeySetClient
import ResourceAPI
import ServiceKit

/// `/v1/collections`: named collections, private or public, and their photos in the order added.
struct CollectionsController: Sendable {
    let collections: CollectionStore
    let keys: KeySetCache

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("collections", use: create)
            .get("collections", use: list)
            .get("collections/:id", use: show)
            .patch("collections/:id", use: update)
            .delete("collections/:id", use: delete)
            .get("collections/:id/photos", use: photos)
            .put("collections/:id/photos/:photoKey", use: add)
            .delete("collections/:id/photos/:photoKey", use: remove)
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        var request = request
        let (new, key) = try await request.decodeCreation(as: NewCollection.self, optionalKeyFor: "collection", context: context)
        let outcome = try await collections.create(
            user: caller.id,
            title: new.title,
            description: new.description,
            isPrivate: new.isPrivate,
            idempotency: key
        )
        return try IdempotencyKey.response(outcome) { created in
            try VersionTag.response(
                CollectionBody(created),
                status: .created,
                version: created.version,
                headers: [.location: "/v1/collections/\(created.id.lowercased)"]
            )
        }
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let owner: UUID
        switch request.uri.queryParameters.get("owner") {
        case nil, "me": owner = caller.id
        case let text?:
            guard let id = UUID(uuidString: text) else {
                throw Problem.validation([FieldError(.parameter("owner"), "owner: me or a user id")])
            }
            owner = id
        }
        let sync = try SyncRequest(request, list: "collections", owner: owner.lowercased)
        if sync.since != nil, owner != caller.id {
            throw Problem.validation([FieldError(.parameter("since"), "since: only your own collections sync")])
        }
        let page = try await collections.collections(of: owner, user: caller.id, sync: sync)
        return try JSONBody.tagged(page.map(CollectionBody.init), for: request)
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        guard let collection = try await collections.collection(try Self.id(context), user: caller.id) else { throw CollectionStore.notFound }
        return try VersionTag.response(CollectionBody(collection), version: collection.version, request: request)
    }

    @Sendable func update(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let id = try Self.id(context)
        var request = request
        let version = try VersionTag.optional(request)
        let change = try await request.decodeBody(as: CollectionChange.self, context: context)
        let updated = try await collections.update(id, user: caller.id, fields: change.fields, expecting: version)
        return try VersionTag.response(CollectionBody(updated), version: updated.version)
    }

    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        try await collections.delete(try Self.id(context), user: caller.id)
        return Response(status: .noContent)
    }

    @Sendable func photos(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let page = try await collections.photos(of: try Self.id(context), user: caller.id, page: try PageRequest(request))
        return try JSONBody.tagged(page.map(CollectionPhotoBody.init), for: request)
    }

    @Sendable func add(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        let added = try await collections.add(try PhotoKey.parameter(context.parameters.get("photoKey")), to: try Self.id(context), user: caller.id)
        return Response(status: added ? .created : .noContent)
    }

    @Sendable func remove(_ request: Request, context: AppRequestContext) async throws -> Response {
        let caller = try await keys.caller(request.headers)
        _ = try await collections.remove(try PhotoKey.parameter(context.parameters.get("photoKey")), from: try Self.id(context), user: caller.id)
        return Response(status: .noContent)
    }

    /// The collection id of the path; an id that is no UUID names no collection.
    static func id(_ context: AppRequestContext) throws -> UUID {
        try context.parameters.uuid("id", orThrow: CollectionStore.notFound)
    }
}

/// A new collection's fields, from `/v1/collections` or a `/rest/v1/collections` row.
struct NewCollection: JSONObjectBody {
    static let maxTitle = 100
    static let maxDescription = 500

    var title: String
    var description: String
    var isPrivate: Bool

    init(reading body: inout JSONObject) throws {
        let title = body.text("title", required: true, maxCharacters: Self.maxTitle, allowEmpty: false)
        let description = body.text("description", required: false, maxCharacters: Self.maxDescription)
        let isPrivate = body.bool("private", required: true)
        (self.title, self.isPrivate) = try body.validated(title, isPrivate)
        self.description = description ?? ""
    }
}

/// The fields a change of a collection sets, from `PATCH /v1/collections/{id}` or a `/rest/v1` row.
struct CollectionChange: JSONObjectBody {
    var fields: CollectionStore.Fields

    init(reading body: inout JSONObject) throws {
        fields = CollectionStore.Fields(
            title: body.text("title", required: false, maxCharacters: NewCollection.maxTitle, allowEmpty: false),
            description: body.text("description", required: false, maxCharacters: NewCollection.maxDescription),
            isPrivate: body.bool("private", required: false)
        )
        try body.validate()
    }
}
