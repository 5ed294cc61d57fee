import Foundation

/// A stored file as Storage's list, remove and info answers describe it (snake_case keys, as the
/// clients decode them).
struct FileObjectBody: Encodable, Sendable {
    struct Metadata: Encodable, Sendable {
        var eTag: String
        var size: Int
        var mimetype: String
        var cacheControl: String
        var lastModified: Date
        var contentLength: Int
        var httpStatusCode: Int
    }

    var name: String
    var id: String?
    var bucketId: String?
    var owner: String?
    var updatedAt: Date?
    var createdAt: Date?
    var lastAccessedAt: Date?
    var metadata: Metadata?

    private enum CodingKeys: String, CodingKey {
        case name, id
        case bucketId = "bucket_id"
        case owner
        case updatedAt = "updated_at"
        case createdAt = "created_at"
        case lastAccessedAt = "last_accessed_at"
        case metadata
    }

    /// A file, named `name` (relative to a listed folder, or in full).
    init(_ object: StoredObject, name: String, full: Bool) {
        self.name = name
        id = object.id.uuidString.lowercased()
        if full {
            bucketId = object.path.bucket.rawValue
            owner = object.path.owner.uuidString.lowercased()
        }
        updatedAt = object.updatedAt
        createdAt = object.createdAt
        lastAccessedAt = object.updatedAt
        metadata = Metadata(
            eTag: object.etag,
            size: object.size,
            mimetype: object.mimeType,
            cacheControl: object.cacheControl,
            lastModified: object.updatedAt,
            contentLength: object.size,
            httpStatusCode: 200
        )
    }

    /// A folder of a listing: only its name; every other key null.
    init(folder: String) {
        name = folder
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(bucketId, forKey: .bucketId)
        try container.encodeIfPresent(owner, forKey: .owner)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastAccessedAt, forKey: .lastAccessedAt)
        try container.encode(metadata, forKey: .metadata)
    }
}

/// `GET /storage/v1/object/info/{bucket}/{name}`.
struct ObjectInfoBody: Encodable, Sendable {
    var id: String
    var name: String
    var bucketId: String
    var version: String
    var size: Int
    var contentType: String
    var cacheControl: String
    var etag: String
    var metadata: [String: Int]
    var lastModified: Date
    var createdAt: Date

    private enum CodingKeys: String, CodingKey {
        case id, name
        case bucketId = "bucket_id"
        case version, size
        case contentType = "content_type"
        case cacheControl = "cache_control"
        case etag, metadata
        case
            lastModified = "last_modified"
        case createdAt = "created_at"
    }

    init(_ object: StoredObject) {
        id = object.id.uuidString.lowercased()
        name = object.path.name
        bucketId = object.path.bucket.rawValue
        version = String(object.blobKey.segments.last ?? "")
        size = object.size
        contentType = object.mimeType
        cacheControl = object.cacheControl
        etag = object.etag
        metadata = ["width": object.width, "height": object.height]
        lastModified = object.updatedAt
        createdAt = object.createdAt
    }
}

/// One entry of a batch signing answer.
struct SignedItemBody: Encodable, Sendable {
    var error: String?
    var path: String
    var signedURL: String?

    private enum CodingKeys: String, CodingKey { case error, path, signedURL }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(error, forKey: .error)
        try container.encode(path, forKey: .path)
        try container.encode(signedURL, forKey: .signedURL)
    }
}
