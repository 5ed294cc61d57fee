import Blobs
import Foundation
import Hummingbird
import Imaging
import KeySetClient
import NIOCore
import ResourceAPI
import ServiceKit

/// `POST /v1/uploads`: a user's own photo, streamed to the blob store as it arrives (never held
/// whole in memory), then checked from its header — JPEG, PNG or WebP, at most 50 megapixels —
/// before it is recorded. An optional `Idempotency-Key` makes a retry safe: the same key with the
/// same bytes answers the first upload again (`Idempotent-Replayed: true`), with other bytes 422.
struct UploadsController: Sendable {
    let store: EditStore
    let blobs: any BlobStore
    let keys: KeySetCache
    let links: MediaLinks
    let maxBytes: Int

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("uploads", use: upload)
    }

    @Sendable func upload(_ request: Request, context: AppRequestContext) async throws -> Response {
        let user = try await keys.caller(request.headers).id
        let body = KeyedUploadBody(request.body, key: try IdempotencyKey.optionalKey(of: request, what: "upload"))
        let id = UUID()
        // Stored under a neutral name first; renamed to its format's once the header says which.
        let pending = BlobKey.upload(user: user, upload: id, format: "jpg")
        let bytes: Int
        do {
            bytes = try await blobs.put(pending, streaming: body, limit: maxBytes)
        } catch BlobError.tooLarge(let limit) {
            throw Problem(
                status: .contentTooLarge,
                type: "upload-too-large",
                title: "Upload too large",
                detail: "Photos up to \(limit >> 20) MB can be uploaded."
            )
        }
        let header: SourceHeader
        do {
            header = try await SourceInspection.inspect(pending, in: blobs, limits: SourceLimits(maxBytes: maxBytes))
        } catch let error as ImagingError {
            try? await blobs.delete(pending)
            throw Problem(status: .unprocessableContent, type: "unsupported-image", title: "Not a photo Splash can edit", detail: error.description)
        }
        let key = BlobKey.upload(user: user, upload: id, format: header.format.rawValue)
        if key != pending {
            try await blobs.move(pending, to: key)
        }
        let upload = EditStore.Upload(
            id: id,
            userID: user,
            key: key.path,
            format: header.format.rawValue,
            width: header.width,
            height: header.height,
            bytes: bytes
        )
        let outcome: IdempotencyKey.Outcome<EditStore.Upload>
        do {
            outcome = try await store.insert(upload, idempotency: body.idempotency)
        } catch {
            try? await blobs.delete(key)
            throw error
        }
        if !outcome.isCreated {
            // A retry: the first request's bytes are the upload's; these are not needed.
            try? await blobs.delete(key)
        }
        return try IdempotencyKey.response(outcome) { upload in
            let signed = links.sign(BlobKey(upload.key) ?? key)
            return try JSONBody.response(
                .created,
                UploadBody(
                    uploadId: upload.id.lowercased,
                    format: upload.format,
                    width: upload.width,
                    height: upload.height,
                    bytes: upload.bytes,
                    url: signed.url,
                    expiresAt: signed.expiresAt
                )
            )
        }
    }
}
