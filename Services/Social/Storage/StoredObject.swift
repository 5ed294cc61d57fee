import Blobs
import Foundation
import PostgresNIO

/// A storage object's row: where its bytes are and what they are.
struct StoredObject: Sendable, Equatable {
    enum State: String, Sendable { case pending, stored, attached }

    var id: UUID
    var path: ObjectPath
    var state: State
    var blobKey: BlobKey
    var size: Int
    var mimeType: String
    var width: Int
    var height: Int
    var cacheControl: String
    var createdAt: Date
    var updatedAt: Date

    static let columns = "id, bucket, name, state, blob_key, size, mime_type, width, height, cache_control, created_at, updated_at"

    init(
        id: UUID,
        path: ObjectPath,
        state: State,
        blobKey: BlobKey,
        size: Int,
        mimeType: String,
        width: Int,
        height: Int,
        cacheControl: String,
        createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.path = path
        self.state = state
        self.blobKey = blobKey
        self.size = size
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.cacheControl = cacheControl
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// A row selected with `columns`.
    init(_ row: PostgresRow) throws {
        let (id, bucket, name, state, blob, size, mime, width, height, cache, created, updated) =
            try row.decode((UUID, String, String, String, String, Int, String, Int, Int, String, Date, Date).self)
        guard let bucket = Bucket(rawValue: bucket), let state = State(rawValue: state), let blobKey = BlobKey(blob) else {
            throw UnreadableRow(table: "objects", id: id)
        }
        self.init(
            id: id,
            path: try ObjectPath(bucket: bucket, name: name),
            state: state,
            blobKey: blobKey,
            size: size,
            mimeType: mime,
            width: width,
            height: height,
            cacheControl: cache,
            createdAt: created,
            updatedAt: updated
        )
    }

    /// Its strong entity tag: its id and the version of its bytes.
    /// The version of the object's bytes: its blob's own id, new with every upload.
    var version: String { blobKey.segments.last.map(String.init) ?? "" }
    var etag: String { "\"\(version)\"" }
}

/// A row the service cannot have written (a constraint would have refused it): reported, not
/// served.
struct UnreadableRow: Error, CustomStringConvertible {
    var table: String
    var id: UUID

    var description: String { "\(table) row \(id.uuidString.lowercased()) cannot be read" }
}
