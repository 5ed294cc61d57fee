import Contracts
import Foundation

/// An edit as the API shows it to its owner.
struct Edit: Sendable, Equatable {
    enum Status: String, Codable, Sendable { case queued, rendering, completed, failed }

    struct Result: Sendable, Equatable {
        var key: String
        var width: Int
        var height: Int
        var bytes: Int
        var quality: Int
    }

    /// The photo the edit started from, as far as it is kept.
    enum Original: Sendable, Equatable {
        /// The user's upload, kept as bytes under `key`.
        case upload(UploadedOriginal)
        /// An Unsplash photo's URLs, recorded when the edit was rendered.
        case unsplash(OriginalReference)
    }

    var id: UUID
    var userID: UUID
    var source: EditSource
    var original: Original?
    var filters: [FilterStep]
    var output: EditOutput
    var status: Status
    var result: Result?
    var failureReason: String?
    var createdAt: Date
    var finishedAt: Date?
}

/// A new edit as `POST /v1/edits` describes it.
struct EditRequest: Decodable, Sendable {
    var source: EditSource
    var filters: [FilterStep]
    var output: OutputRequest?

    struct OutputRequest: Decodable, Sendable {
        var format: EditOutput.Format?
        var longestEdge: Int?
    }
}

/// An uploaded original as an edit shows it (from its `uploads` row).
struct UploadedOriginal: Codable, Sendable, Equatable {
    var key: String
    var format: String
    var width: Int
    var height: Int
    var bytes: Int
}

/// An Unsplash original kept as a reference: the photo's `urls` from photo-catalog.
struct OriginalReference: Codable, Sendable, Equatable {
    var urls: [String: String]
}
