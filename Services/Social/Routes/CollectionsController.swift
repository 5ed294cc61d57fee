import Foundation
import Hummingbird
import KeySetClient
import ResourceAPI
import ServiceKit

/// `/v1/collections`: named collections, private or public, and their photos in the order added.
struct CollectionsController: Sendable {
    let collections: CollectionStore
    let keys: KeySetCache

    static let maxTitle = 100
    static let maxDescription = 500

    struct NewCollection {
        var title: String
        var description: String
        var isPrivate: Bool
    }

    /// A new collection's fields, read from a body (`/v1/collections` or a `/rest/v1` row); `nil`
    /// when the body's errors say why.
    static func newCollection(_ body: inout JSONObject) -> NewCollection? {
        let title = body.text("title", required: true, maxCharacters: maxTitle, allowEmpty: false)
        let description = body.text("description", required: false, maxCharacters: maxDescription)
        let isPrivate = body.bool("private", required: true)
        guard let title, let isPrivate else { return nil }
        return NewCollection(title: title, description: description ?? "", isPrivate: isPrivate)
    }

    /// The fields a change sets, read from a body.
    static func changedFields(_ body: inout JSONObject) -> CollectionStore.Fields {
        CollectionStore.Fields(
            title: body.text("title", required: false, maxCharacters: maxTitle, allowEmpty: false),
            description: body.text("description", required: false, maxCharacters: maxDescription),
            isPrivate: body.bool("private", required: false)
        )
    }

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("collections") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            var request = request
            var body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let new = Self.newCollection(&body)
            try body.validate()
            let created = try await collections.create(user: user, title: new!.title, description: new!.description, isPrivate: new!.isPrivate)
            return try JSONBody.response(.created, created, headers: [.location: "/v1/collections/\(created.id)"])
        }
        group.get("collections") { request, _ in
            let user = try await keys.authenticatedUser(request.headers)
            let owner: UUID
            switch request.uri.queryParameters.get("owner") {
            case nil, "me": owner = user
            case let text?:
                guard let id = UUID(uuidString: text) else {
                    throw Problem.validation([FieldError(.parameter("owner"), "owner: me or a user id")])
                }
                owner = id
            }
            return try JSONBody.tagged(try await collections.collections(of: owner, user: user, page: try PageRequest(request)), for: request)
        }
        group.get("collections/:id") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            guard let collection = try await collections.collection(try Self.id(context), user: user) else { throw CollectionStore.notFound }
            return try JSONBody.tagged(collection, for: request)
        }
        group.patch("collections/:id") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            let id = try Self.id(context)
            var request = request
            var body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let fields = Self.changedFields(&body)
            try body.validate()
            return try JSONBody.response(.ok, try await collections.update(id, user: user, fields: fields))
        }
        group.delete("collections/:id") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            try await collections.delete(try Self.id(context), user: user)
            return Response(status: .noContent)
        }
        group.get("collections/:id/photos") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            return try JSONBody.tagged(
                try await collections.photos(of: try Self.id(context), user: user, page: try PageRequest(request)),
                for: request
            )
        }
        group.put("collections/:id/photos/:photoKey") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            let added = try await collections.add(try PhotoKey.parameter(context.parameters.get("photoKey")), to: try Self.id(context), user: user)
            return Response(status: added ? .created : .noContent)
        }
        group.delete("collections/:id/photos/:photoKey") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            _ = try await collections.remove(try PhotoKey.parameter(context.parameters.get("photoKey")), from: try Self.id(context), user: user)
            return Response(status: .noContent)
        }
    }

    /// The collection id of the path; an id that is no UUID names no collection.
    static func id(_ context: AppRequestContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw CollectionStore.notFound }
        return id
    }
}
