import Blobs
import Contracts
import Foundation
import Hummingbird
import Imaging
import NIOCore
import ResourceAPI

/// `GET /v1/filters`.
struct FiltersBody: Encodable {
    var filters: [FilterDefinition]
}

/// An edit as its owner sees it: what was asked, where it stands, and signed links to the result.
struct EditBody: Encodable {
    struct ResultBody: Encodable {
        var url: String
        var expiresAt: Date
        var width: Int
        var height: Int
        var bytes: Int
        var quality: Int
        var format: EditOutput.Format
    }

    /// The photo the edit started from: an upload through a signed link, or an Unsplash photo's
    /// id and (once rendered) its URLs.
    struct OriginalBody: Encodable {
        var uploadId: String?
        var unsplashPhotoId: String?
        var url: String?
        var expiresAt: Date?
        var format: String?
        var width: Int?
        var height: Int?
        var bytes: Int?
        var urls: [String: String]?
    }

    var id: UUID
    var status: Edit.Status
    var source: EditSource
    var original: OriginalBody?
    var filters: [FilterStep]
    var output: EditOutput
    var result: ResultBody?
    /// The result sized for lists: its media link with a size, a 200 px square and 640 px wide.
    var thumbnails: [String: String]?
    var failureReason: String?
    var createdAt: Date
    var finishedAt: Date?

    init(_ edit: Edit, links: MediaLinks) {
        id = edit.id
        status = edit.status
        source = edit.source
        filters = edit.filters
        output = edit.output
        failureReason = edit.failureReason
        createdAt = edit.createdAt
        finishedAt = edit.finishedAt
        switch (edit.source, edit.original) {
        case (.upload(let id), .upload(let upload)):
            let signed = BlobKey(mediaPath: upload.key).map { links.sign($0) }
            original = OriginalBody(
                uploadId: id.lowercased,
                url: signed?.url,
                expiresAt: signed?.expiresAt,
                format: upload.format,
                width: upload.width,
                height: upload.height,
                bytes: upload.bytes
            )
        case (.unsplashPhoto(let id), let kept):
            var reference = OriginalBody(unsplashPhotoId: id)
            if case .unsplash(let recorded) = kept { reference.urls = recorded.urls }
            original = reference
        case (.upload, _):
            // The upload was deleted; the edit stands on its own.
            original = nil
        }
        if let stored = edit.result, let key = BlobKey(mediaPath: stored.key) {
            let signed = links.sign(key)
            result = ResultBody(
                url: signed.url,
                expiresAt: signed.expiresAt,
                width: stored.width,
                height: stored.height,
                bytes: stored.bytes,
                quality: stored.quality,
                format: edit.output.format
            )
            let sized = TransformRequest.thumbnails(ofMediaLink: signed.url)
            thumbnails = ["small": sized.small, "medium": sized.medium]
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, status, source, original, filters, output, result, thumbnails, failureReason, createdAt, finishedAt
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.lowercased, forKey: .id)
        try container.encode(status, forKey: .status)
        try container.encode(source, forKey: .source)
        try container.encodeIfPresent(original, forKey: .original)
        try container.encode(filters, forKey: .filters)
        try container.encode(output, forKey: .output)
        try container.encodeIfPresent(result, forKey: .result)
        try container.encodeIfPresent(thumbnails, forKey: .thumbnails)
        try container.encodeIfPresent(failureReason, forKey: .failureReason)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(finishedAt, forKey: .finishedAt)
    }
}

/// `GET /v1/edits`: newest first; `nextCursor` is absent on the last page.
/// `GET /v1/edits`: a sync answer (`items`, `deleted`, `nextCursor`, `syncToken`), its items also
/// under `edits`, the name this list had before every list an app keeps offline shared one shape.
struct EditPage: Encodable {
    var page: SyncPage<EditBody>

    private enum CodingKeys: String, CodingKey { case items, edits, deleted, nextCursor, syncToken }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(page.items, forKey: .items)
        try container.encode(page.items, forKey: .edits)
        try container.encode(page.deleted, forKey: .deleted)
        try container.encode(page.nextCursor, forKey: .nextCursor)
        try container.encode(page.syncToken.description, forKey: .syncToken)
    }
}

/// `POST /v1/uploads`: the new upload, with a signed link to the stored original.
struct UploadBody: Encodable {
    var uploadId: String
    var format: String
    var width: Int
    var height: Int
    var bytes: Int
    var url: String
    var expiresAt: Date
}
