import Blobs
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Imaging
import KeySetClient
import Multipart
import NIOCore
import ResourceAPI
import ServiceKit

/// `/storage/v1/object/…`: the Supabase Storage calls the apps' clients make, for the buckets
/// `posts` and `avatars` — upload (raw or multipart, `x-upsert`, or through a signed upload URL),
/// replace, download (with a token, through a signed link, or from the public bucket), info,
/// signed links (one or many), list and remove; an upload may carry an `Idempotency-Key`, so an app's queued retry is not 409. Names are `{owner id}/…`; writing under another user's id is 403. Errors are Storage's
/// (`StorageErrorBody`).
///
/// Paths are read from the raw request target, segment by segment, so an encoded slash or dot
/// segment is refused rather than resolved.
struct StorageController: Sendable {
    let objects: ObjectStore
    let links: StorageLinks
    let keys: KeySetCache

    static let prefix = "/storage/v1/object/"

    func addRoutes(to router: Router<AppRequestContext>) {
        for method in [HTTPRequest.Method.get, .head, .post, .put, .delete] {
            router.on("storage/v1/object/**", method: method, use: handle)
        }
    }

    /// Every Storage call: which one it is, read from the method and the path's first segments.
    @Sendable func handle(_ request: Request, context: AppRequestContext) async throws -> Response {
        let path = request.uri.path
        guard path.hasPrefix(Self.prefix) else { throw StorageError.notFound }
        let parts = path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        let method = request.method
        switch (method, parts.first) {
        case (.post, "sign") where parts.count == 2:
            return try await signMany(request, context: context, bucket: parts[1])
        case (.post, "sign") where parts.count > 2:
            return try await signOne(request, context: context, path: try ObjectPath(bucket: parts[1], rawName: Array(parts.dropFirst(2))))
        case (.get, "sign"), (.head, "sign"):
            guard parts.count > 2 else { throw StorageError.notFound }
            return try await signedDownload(request, path: try ObjectPath(bucket: parts[1], rawName: Array(parts.dropFirst(2))))
        case (.get, "public"), (.head, "public"):
            guard parts.count > 2 else { throw StorageError.notFound }
            let object = try ObjectPath(bucket: parts[1], rawName: Array(parts.dropFirst(2)))
            guard object.bucket.isPublic, let stored = try await objects.object(object) else { throw StorageError.notFound }
            return try await download(stored, request: request)
        case (.get, "info"):
            guard parts.count > 2 else { throw StorageError.notFound }
            let user = try await keys.caller(request.headers).id
            guard let stored = try await objects.object(try ObjectPath(bucket: parts[1], rawName: Array(parts.dropFirst(2))), user: user) else {
                throw StorageError.notFound
            }
            return try JSONBody.response(.ok, ObjectInfoBody(stored))
        case (.post, "list") where parts.count == 2:
            return try await list(request, context: context, bucket: try Bucket.named(parts[1]))
        case (.delete, _) where parts.count == 1:
            return try await remove(request, context: context, bucket: try Bucket.named(parts[0]))
        case (.get, _?), (.head, _?):
            guard parts.count > 1 else { throw StorageError.notFound }
            let user = try await keys.caller(request.headers).id
            guard let stored = try await objects.object(try ObjectPath(bucket: parts[0], rawName: Array(parts.dropFirst())), user: user) else {
                throw StorageError.notFound
            }
            return try await download(stored, request: request)
        case (.post, "upload") where parts.count > 3 && parts[1] == "sign":
            return try await signUpload(request, path: try ObjectPath(bucket: parts[2], rawName: Array(parts.dropFirst(3))))
        case (.put, "upload") where parts.count > 3 && parts[1] == "sign":
            return try await signedUpload(request, context: context, path: try ObjectPath(bucket: parts[2], rawName: Array(parts.dropFirst(3))))
        case (.post, _?), (.put, _?):
            guard parts.count > 1 else { throw StorageError.invalidKey("Name the object: /object/{bucket}/{your user id}/{file name}") }
            let user = try await keys.caller(request.headers).id
            let object = try ObjectPath(bucket: parts[0], rawName: Array(parts.dropFirst())).ownedBy(user)
            let mode: ObjectStore.Mode = method == .put ? .replace : .create(upsert: request.headers[.xUpsert]?.lowercased() == "true")
            return try await upload(request, context: context, path: object, user: user, mode: mode)
        default:
            throw StorageError.notFound
        }
    }

    // MARK: Upload

    private func upload(_ request: Request, context: AppRequestContext, path: ObjectPath, user: UUID, mode: ObjectStore.Mode) async throws -> Response
    {
        var cacheControl = Self.cacheControl(request.headers[.cacheControl])
        let body: ObjectStore.Body
        if let boundary = MultipartForm.boundary(of: request.headers[.contentType]) {
            var request = request
            let bytes = Array(buffer: try await request.collectBody(upTo: context.maxUploadSize))
            guard let form = MultipartForm(bytes, boundary: boundary), let file = form.file else {
                throw StorageError.invalidRequest("The multipart body holds no file")
            }
            if let field = form.field("cacheControl") { cacheControl = Self.cacheControl(field) }
            body = .bytes(Array(file.body))
        } else {
            body = .stream(request.body)
        }
        let outcome = try await objects.upload(
            path,
            user: user,
            mode: mode,
            body: body,
            idempotencyKey: try IdempotencyKey.optionalKey(of: request, what: "upload"),
            cacheControl: cacheControl
        )
        return try IdempotencyKey.response(outcome) { stored in
            try JSONBody.response(.ok, ["Id": stored.id.uuidString.lowercased(), "Key": path.description])
        }
    }

    /// `POST /object/upload/sign/{bucket}/{name}`: a URL that uploads this one object of the
    /// caller's for two hours without a session (a background upload outlives its access token).
    private func signUpload(_ request: Request, path: ObjectPath) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        let object = try path.ownedBy(user)
        let upsert = request.headers[.xUpsert]?.lowercased() == "true"
        if !upsert, try await objects.object(object, user: user) != nil { throw StorageError.duplicate }
        return try JSONBody.response(.ok, ["url": links.signUpload(object, upsert: upsert).url])
    }

    /// `PUT /object/upload/sign/{bucket}/{name}?token=…`: the upload a signed upload URL allows,
    /// as its owner, by the rules of any upload (raw or multipart, checked by its bytes).
    private func signedUpload(_ request: Request, context: AppRequestContext, path: ObjectPath) async throws -> Response {
        let grant: StorageLinks.UploadGrant
        do throws(LinkRefusal) {
            grant = try links.verifyUpload(path, token: request.uri.queryParameters.get("token"))
        } catch {
            throw error == .expired ? StorageError.expiredSignature : StorageError.invalidSignature
        }
        // A URL outlives the hour in which a deleted account's tokens are refused by name: past
        // it, the owner must still be known (an erased account's profile is gone).
        let signedAgo = Int(Date().timeIntervalSince1970) - (grant.expires - StorageLinks.uploadLifetime)
        var ownerGone = keys.deletedUsers.contains(path.owner)
        if !ownerGone, signedAgo > Int(DeletedUsers.window.components.seconds) {
            ownerGone = try await !objects.ownerIsKnown(path.owner)
        }
        if ownerGone { throw StorageError.unauthorized("The account this upload URL was made for no longer exists") }
        return try await upload(request, context: context, path: path, user: path.owner, mode: .create(upsert: grant.upsert))
    }

    /// `max-age=<seconds>` from what clients send: a bare number of seconds (storage3's form field)
    /// or a `max-age` directive; anything else is the default hour.
    static func cacheControl(_ value: String?) -> String {
        guard let value = value?.trimmingCharacters(in: .whitespaces) else { return "max-age=3600" }
        let seconds = value.hasPrefix("max-age=") ? String(value.dropFirst("max-age=".count).prefix { $0.isNumber }) : value
        guard let number = Int(seconds), (0...31_536_000).contains(number) else { return "max-age=3600" }
        return "max-age=\(number)"
    }

    // MARK: Download

    private func download(_ object: StoredObject, request: Request) async throws -> Response {
        var headers: HTTPFields = [
            .eTag: object.etag, .cacheControl: object.cacheControl, .contentType: object.mimeType,
            .lastModified: Self.httpDate(object.updatedAt), .xContentTypeOptions: "nosniff",
        ]
        if EntityTag.matches(request.headers[.ifNoneMatch], object.etag) {
            return Response(status: .notModified, headers: headers)
        }
        guard let bytes = try await objects.bytes(of: object) else { throw StorageError.notFound }
        headers[.contentLength] = String(bytes.count)
        return Response(
            status: .ok,
            headers: headers,
            body: request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    private func signedDownload(_ request: Request, path: ObjectPath) async throws -> Response {
        do throws(LinkRefusal) {
            try links.verify(path, token: request.uri.queryParameters.get("token"))
        } catch {
            throw error == .expired ? StorageError.expiredSignature : StorageError.invalidSignature
        }
        guard let stored = try await objects.object(path) else { throw StorageError.notFound }
        return try await download(stored, request: request)
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    // MARK: Signed links

    /// `expiresIn`: seconds, as a number or a numeric string (storage3 sends "600").
    private static func lifetime(_ body: JSONObject) throws -> Int {
        let seconds: Int? =
            switch body.fields["expiresIn"] {
            case .int(let value)?: value
            case .double(let value)?: Int(exactly: value)
            case .string(let text)?: Int(text.trimmingCharacters(in: .whitespaces))
            default: nil
            }
        guard let seconds, (1...StorageLinks.maxLifetime).contains(seconds) else {
            throw StorageError.invalidRequest("expiresIn: a whole number of seconds from 1 to \(StorageLinks.maxLifetime)")
        }
        return seconds
    }

    private func signOne(_ request: Request, context: AppRequestContext, path: ObjectPath) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        var request = request
        let body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
        let (lifetime, transform) = (try Self.lifetime(body), try Self.transform(body))
        guard let object = try await objects.object(path, user: user) else { throw StorageError.notFound }
        return try JSONBody.response(.ok, ["signedURL": signed(object, transform, lifetime: lifetime)])
    }

    /// A link to the object, or with a transform to its sized copy (pinned to this version).
    private func signed(_ object: StoredObject, _ transform: TransformRequest?, lifetime: Int) -> String {
        guard let transform else { return links.sign(object.path, lifetime: lifetime).path }
        return links.signRender(object, transform, lifetime: lifetime).path
    }

    /// A sign request's `transform` (`width`, `height`, `resize`, `quality`, `format`), if any.
    private static func transform(_ body: JSONObject) throws -> TransformRequest? {
        guard let value = body.fields["transform"], value != .null else { return nil }
        guard case .object(let fields) = value else {
            throw StorageError.invalidRequest("transform: an object of width, height, resize, quality, format")
        }
        do throws(TransformRefusal) {
            return try TransformRequest { name in
                switch fields[name] {
                case .int(let number)?: String(number)
                case .double(let number)?: Int(exactly: number).map(String.init) ?? String(number)
                case .string(let text)?: text
                case nil, .null?: nil
                default: "?"
                }
            }
        } catch {
            throw StorageError.invalidRequest("transform.\(error.message)")
        }
    }

    private func signMany(_ request: Request, context: AppRequestContext, bucket: Substring) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        let bucket = try Bucket.named(bucket)
        var request = request
        let body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
        let (lifetime, transform) = (try Self.lifetime(body), try Self.transform(body))
        guard case .array(let values)? = body.fields["paths"], values.count <= 1_000 else {
            throw StorageError.invalidRequest("paths: a list of at most 1,000 object names")
        }
        var items: [SignedItemBody] = []
        for value in values {
            guard case .string(let name) = value else { throw StorageError.invalidRequest("paths: names are strings") }
            if let path = try? ObjectPath(bucket: bucket, name: name), let object = try await objects.object(path, user: user) {
                items.append(SignedItemBody(error: nil, path: name, signedURL: signed(object, transform, lifetime: lifetime)))
            } else {
                items.append(SignedItemBody(error: "Either the object does not exist or you do not have access to it", path: name, signedURL: nil))
            }
        }
        return try JSONBody.response(.ok, items)
    }

    // MARK: List and remove

    /// The folders and files directly under `prefix` among the user's objects, Storage-style.
    private func list(_ request: Request, context: AppRequestContext, bucket: Bucket) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        var request = request
        let body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
        var prefix = ""
        if case .string(let text)? = body.fields["prefix"] { prefix = text.trimmingCharacters(in: CharacterSet(charactersIn: "/")) }
        let limit = min(1_000, max(1, Self.integer(body.fields["limit"]) ?? 100))
        let offset = max(0, Self.integer(body.fields["offset"]) ?? 0)
        var search = ""
        if case .string(let text)? = body.fields["search"] { search = text.lowercased() }
        var column = "name"
        var descending = false
        if case .object(let sort)? = body.fields["sortBy"] {
            if case .string(let text)? = sort["column"], ["name", "created_at", "updated_at", "last_accessed_at"].contains(text) { column = text }
            if case .string(let text)? = sort["order"] { descending = text.lowercased() == "desc" }
        }
        let folder = prefix.isEmpty ? "" : prefix + "/"
        var folders: [String] = []
        var files: [(String, StoredObject)] = []
        for object in try await objects.objects(of: user, in: bucket, prefix: folder) {
            let rest = object.path.name.dropFirst(folder.count)
            if let slash = rest.firstIndex(of: "/") {
                let name = String(rest[..<slash])
                if folders.last != name, !folders.contains(name) { folders.append(name) }
            } else {
                files.append((String(rest), object))
            }
        }
        if !search.isEmpty {
            folders = folders.filter { $0.lowercased().hasPrefix(search) }
            files = files.filter { $0.0.lowercased().hasPrefix(search) }
        }
        files.sort { a, b in
            let ordered =
                switch column {
                case "created_at": (a.1.createdAt, a.0) < (b.1.createdAt, b.0)
                case "updated_at", "last_accessed_at": (a.1.updatedAt, a.0) < (b.1.updatedAt, b.0)
                default: a.0 < b.0
                }
            return descending ? !ordered : ordered
        }
        folders.sort { descending ? $0 > $1 : $0 < $1 }
        let entries = folders.map { FileObjectBody(folder: $0) } + files.map { FileObjectBody($0.1, name: $0.0, full: false) }
        return try JSONBody.response(.ok, Array(entries.dropFirst(offset).prefix(limit)))
    }

    private static func integer(_ value: JSONValue?) -> Int? {
        switch value {
        case .int(let number)?: number
        case .string(let text)?: Int(text)
        default: nil
        }
    }

    /// Deletes the named objects of the user's (a post's photo stays until its post is deleted);
    /// answers the ones deleted.
    private func remove(_ request: Request, context: AppRequestContext, bucket: Bucket) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        var request = request
        let body = try JSONObject(Array(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
        guard case .array(let values)? = body.fields["prefixes"], values.count <= 1_000 else {
            throw StorageError.invalidRequest("prefixes: a list of at most 1,000 object names")
        }
        var names: [String] = []
        for value in values {
            guard case .string(let name) = value else { throw StorageError.invalidRequest("prefixes: names are strings") }
            names.append(try ObjectPath(bucket: bucket, name: name).name)
        }
        let deleted = try await objects.delete(names, in: bucket, user: user)
        return try JSONBody.response(.ok, deleted.map { FileObjectBody($0, name: $0.path.name, full: true) })
    }
}

extension HTTPField.Name {
    static let xUpsert = Self("x-upsert")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
