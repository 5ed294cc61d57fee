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
/// before it is recorded.
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
        let id = UUID()
        // Stored under a neutral name first; renamed to its format's once the header says which.
        let pending = BlobKey.upload(user: user, upload: id, format: "jpg")
        let bytes: Int
        do {
            bytes = try await blobs.put(pending, streaming: request.body, limit: maxBytes)
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
        try await store.insert(
            EditStore.Upload(
                id: id,
                userID: user,
                key: key.path,
                format: header.format.rawValue,
                width: header.width,
                height: header.height,
                bytes: bytes
            )
        )
        let signed = links.sign(key)
        return try JSONBody.response(
            .created,
            UploadBody(
                uploadId: id.lowercased,
                format: header.format.rawValue,
                width: header.width,
                height: header.height,
                bytes: bytes,
                url: signed.url,
                expiresAt: signed.expiresAt
            )
        )
    }
}
