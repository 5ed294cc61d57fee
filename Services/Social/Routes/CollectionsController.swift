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

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("collections") { request, context in
            let user = try await keys.authenticatedUser(request.headers)
            var request = request
            var body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
            let title = body.text("title", required: true, maxCharacters: Self.maxTitle, allowEmpty: false)
            let description = body.text("description", required: false, maxCharacters: Self.maxDescription)
            let isPrivate = body.bool("private", required: true)
            try body.validate()
            let created = try await collections.create(user: user, title: title!, description: description ?? "", isPrivate: isPrivate!)
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
            let fields = CollectionStore.Fields(
                title: body.text("title", required: false, maxCharacters: Self.maxTitle, allowEmpty: false),
                description: body.text("description", required: false, maxCharacters: Self.maxDescription),
                isPrivate: body.bool("private", required: false)
            )
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
            return try JSONBody.tagged(try await collections.photos(of: try Self.id(context), user: user, page: try PageRequest(request)), for: request)
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
