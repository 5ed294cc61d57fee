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

    var id: UUID
    var userID: UUID
    var source: EditSource
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
