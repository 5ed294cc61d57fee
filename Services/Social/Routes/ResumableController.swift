import Foundation
import HTTPTypes
import Hummingbird
import KeySetClient
import NIOCore
import ResourceAPI
import ServiceKit

/// `/storage/v1/upload/resumable`: TUS 1.0.0 uploads as Supabase Storage serves them (creation,
/// creation-with-upload, termination, expiration), so an upload on a train goes on from where a
/// tunnel cut it. `Upload-Metadata` names `bucketName`, `objectName`, `contentType` and
/// `cacheControl`; the object's rules are a plain upload's, checked at creation (name, size,
/// declared type) and on the bytes when the last chunk lands. Errors are Storage's.
struct ResumableController: Sendable {
    let uploads: ResumableUploads
    let keys: KeySetCache

    static let path = "storage/v1/upload/resumable"
    static let version = "1.0.0"
    static let extensions = "creation,creation-with-upload,termination,expiration"
    /// Media types a declared `contentType` may name (the bytes decide in the end).
    static let imageTypes: Set<String> = ["image/jpeg", "image/jpg", "image/png", "image/webp", "image/heic", "image/heif", "image/avif"]

    func addRoutes(to router: Router<AppRequestContext>) {
        router.post(RouterPath(Self.path), use: create)
        router.on(RouterPath(Self.path), method: .options, use: options)
        router.on(RouterPath("\(Self.path)/:id"), method: .options, use: options)
        router.on(RouterPath("\(Self.path)/:id"), method: .head, use: status)
        router.patch(RouterPath("\(Self.path)/:id"), use: append)
        router.delete(RouterPath("\(Self.path)/:id"), use: terminate)
    }

    /// Discovery: the version, extensions and largest upload this server takes.
    @Sendable func options(_ request: Request, context: AppRequestContext) async throws -> Response {
        Response(
            status: .noContent,
            headers: [
                .tusResumable: Self.version, .tusVersion: Self.version, .tusExtension: Self.extensions,
                .tusMaxSize: String(uploads.objects.maxBytes),
            ]
        )
    }

    /// Creation (and creation-with-upload when a first chunk comes with it).
    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        try Self.checkVersion(request)
        guard let length = request.headers[.uploadLength].flatMap({ Int($0) }), length > 0 else {
            throw StorageError.invalidRequest("Upload-Length: the whole upload's size in bytes (a deferred length is not taken)")
        }
        let metadata = try Self.metadata(request.headers[.uploadMetadata])
        guard let bucket = metadata["bucketName"], let name = metadata["objectName"] else {
            throw StorageError.invalidRequest("Upload-Metadata: name the bucketName and the objectName")
        }
        let path = try ObjectPath(bucket: try Bucket.named(Substring(bucket)), name: name).ownedBy(user)
        if let type = metadata["contentType"], !Self.imageTypes.contains(type.lowercased()) {
            throw StorageError.notAnImage("Only JPEG, PNG, WebP, HEIC/HEIF and AVIF images can be stored, not \(type)")
        }
        var upload = try await uploads.create(
            path,
            user: user,
            length: length,
            upsert: request.headers[.xUpsert]?.lowercased() == "true",
            cacheControl: StorageController.cacheControl(metadata["cacheControl"])
        )
        var headers: HTTPFields = [
            .tusResumable: Self.version, .location: "/\(Self.path)/\(upload.id.lowercased)",
            .uploadExpires: StorageController.httpDate(upload.expiresAt),
        ]
        if request.headers[.contentType] == Self.chunkType {
            upload = try await appended(upload.id, user: user, at: 0, request: request)
            headers[.uploadOffset] = String(upload.offset)
        }
        return Response(status: .created, headers: headers)
    }

    /// Where an upload stands.
    @Sendable func status(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        let upload: ResumableUploads.Upload
        do {
            upload = try await uploads.upload(try Self.id(context), user: user)
        } catch let refusal as ResumableUploads.Refusal {
            throw Self.problem(refusal)
        }
        return Response(
            status: .ok,
            headers: [
                .tusResumable: Self.version, .uploadOffset: String(upload.offset), .uploadLength: String(upload.length),
                .uploadExpires: StorageController.httpDate(upload.expiresAt), .cacheControl: "no-store",
            ]
        )
    }

    /// A chunk at `Upload-Offset`.
    @Sendable func append(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        try Self.checkVersion(request)
        guard request.headers[.contentType] == Self.chunkType else {
            throw Problem(
                status: .unsupportedMediaType,
                type: "invalid_content_type",
                title: "Invalid content type",
                detail: "A chunk is sent as \(Self.chunkType)"
            )
        }
        guard let offset = request.headers[.uploadOffset].flatMap({ Int($0) }), offset >= 0 else {
            throw StorageError.invalidRequest("Upload-Offset: where this chunk starts, in bytes")
        }
        let upload = try await appended(try Self.id(context), user: user, at: offset, request: request)
        return Response(
            status: .noContent,
            headers: [
                .tusResumable: Self.version, .uploadOffset: String(upload.offset),
                .uploadExpires: StorageController.httpDate(upload.expiresAt),
            ]
        )
    }

    /// Termination: the upload and what it had are deleted.
    @Sendable func terminate(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        guard try await uploads.remove(try Self.id(context), user: user) else { throw Self.problem(.notFound) }
        return Response(status: .noContent, headers: [.tusResumable: Self.version])
    }

    // MARK: Parts

    static let chunkType = "application/offset+octet-stream"

    private func appended(_ id: UUID, user: UUID, at offset: Int, request: Request) async throws -> ResumableUploads.Upload {
        do {
            return try await uploads.append(id, user: user, at: offset, body: request.body)
        } catch let refusal as ResumableUploads.Refusal {
            throw Self.problem(refusal)
        }
    }

    private static func id(_ context: AppRequestContext) throws -> UUID {
        try context.parameters.uuid("id", orThrow: problem(.notFound))
    }

    private static func checkVersion(_ request: Request) throws {
        guard request.headers[.tusResumable] == version else {
            throw Problem(
                status: .preconditionFailed,
                type: "unsupported_tus_version",
                title: "Unsupported TUS version",
                detail: "Send Tus-Resumable: \(version)",
                headers: [.tusVersion: version]
            )
        }
    }

    /// `Upload-Metadata`: comma-separated `key base64value` pairs (a key alone has an empty value).
    static func metadata(_ field: String?) throws -> [String: String] {
        var metadata: [String: String] = [:]
        for pair in (field ?? "").split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            guard (1...2).contains(parts.count), let key = parts.first.map(String.init) else {
                throw StorageError.invalidRequest("Upload-Metadata: comma-separated pairs of a key and a base64 value")
            }
            guard parts.count == 2 else {
                metadata[key] = ""
                continue
            }
            guard let data = Data(base64Encoded: String(parts[1])), let value = String(data: data, encoding: .utf8) else {
                throw StorageError.invalidRequest("Upload-Metadata: the value of \(key) is not base64 of UTF-8 text")
            }
            metadata[key] = value
        }
        return metadata
    }

    static func problem(_ refusal: ResumableUploads.Refusal) -> Problem {
        switch refusal {
        case .notFound:
            Problem(status: .notFound, type: "not_found", title: "Not found", detail: "Upload not found")
        case .expired:
            Problem(status: .gone, type: "upload_expired", title: "Upload expired", detail: "The upload expired; start a new one")
        case .offsetMismatch(let current):
            Problem(
                status: .conflict,
                type: "offset_mismatch",
                title: "Offset mismatch",
                detail: "The upload is at offset \(current); send the chunk that starts there"
            )
        case .busy:
            Problem(status: .conflict, type: "upload_busy", title: "Upload busy", detail: "Another request is writing this upload")
        case .pastLength(let length):
            Problem(
                status: .contentTooLarge,
                type: "EntityTooLarge",
                title: "Past the upload's length",
                detail: "The chunk goes past Upload-Length (\(length) bytes)"
            )
        }
    }
}

extension HTTPField.Name {
    static let tusResumable = Self("Tus-Resumable")!
    static let tusVersion = Self("Tus-Version")!
    static let tusExtension = Self("Tus-Extension")!
    static let tusMaxSize = Self("Tus-Max-Size")!
    static let uploadLength = Self("Upload-Length")!
    static let uploadOffset = Self("Upload-Offset")!
    static let uploadMetadata = Self("Upload-Metadata")!
    static let uploadExpires = Self("Upload-Expires")!
}
