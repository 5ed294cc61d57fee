import Foundation

/// What an edit starts from: an Unsplash photo (kept as a reference) or the user's own upload.
public enum EditSource: Codable, Sendable, Equatable {
    case unsplashPhoto(id: String)
    case upload(id: UUID)

    private enum CodingKeys: String, CodingKey { case unsplashPhotoId, uploadId }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let id = try container.decodeIfPresent(String.self, forKey: .unsplashPhotoId) {
            self = .unsplashPhoto(id: id)
        } else {
            self = .upload(id: try container.decode(UUID.self, forKey: .uploadId))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .unsplashPhoto(let id): try container.encode(id, forKey: .unsplashPhotoId)
        case .upload(let id): try container.encode(id, forKey: .uploadId)
        }
    }
}

/// One step of a filter chain, `{"name": "sepia", "intensity": 0.8}`: a name and its numeric
/// parameters side by side, as the apps send them (Services/EditRender/README.md, "Filters").
public struct FilterStep: Codable, Sendable, Equatable {
    public var name: String
    public var parameters: [String: Double]

    public init(name: String, parameters: [String: Double] = [:]) {
        self.name = name
        self.parameters = parameters
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        name = try container.decode(String.self, forKey: Key(stringValue: "name"))
        var parameters: [String: Double] = [:]
        for key in container.allKeys where key.stringValue != "name" {
            parameters[key.stringValue] = try container.decode(Double.self, forKey: key)
        }
        self.parameters = parameters
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(name, forKey: Key(stringValue: "name"))
        for (key, value) in parameters where key != "name" {
            try container.encode(value, forKey: Key(stringValue: key))
        }
    }
}

/// The rendered file's format and size.
public struct EditOutput: Codable, Sendable, Equatable {
    public enum Format: String, Codable, Sendable { case jpeg, webp }
    public var format: Format
    public var longestEdge: Int

    public init(format: Format, longestEdge: Int) {
        self.format = format
        self.longestEdge = longestEdge
    }
}

/// `render.edit.requested.v1`: a render job for the workers.
public struct EditRequested: DomainEvent {
    public static let type = "render.edit.requested.v1"
    public static let topic = TopicCatalog.renderJobs
    public var editId: UUID
    public var userId: UUID
    public var source: EditSource
    public var filters: [FilterStep]
    public var output: EditOutput
    public var requestedAt: Date

    public init(editId: UUID, userId: UUID, source: EditSource, filters: [FilterStep], output: EditOutput, requestedAt: Date) {
        self.editId = editId
        self.userId = userId
        self.source = source
        self.filters = filters
        self.output = output
        self.requestedAt = requestedAt
    }

    public var aggregateID: String { editId.uuidString.lowercased() }
}

/// `render.edit.completed.v1`: the edited image is stored.
public struct EditCompleted: DomainEvent {
    public static let type = "render.edit.completed.v1"
    public static let topic = TopicCatalog.renderResults
    public var editId: UUID
    public var userId: UUID
    public var width: Int
    public var height: Int
    public var bytes: Int
    /// The encoder quality the byte budget allowed (40–92).
    public var quality: Int
    public var format: EditOutput.Format
    public var completedAt: Date

    public init(editId: UUID, userId: UUID, width: Int, height: Int, bytes: Int, quality: Int, format: EditOutput.Format, completedAt: Date) {
        self.editId = editId
        self.userId = userId
        self.width = width
        self.height = height
        self.bytes = bytes
        self.quality = quality
        self.format = format
        self.completedAt = completedAt
    }

    public var aggregateID: String { editId.uuidString.lowercased() }
}

/// `render.edit.failed.v1`: the edit cannot be rendered; `reason` is for a person to read.
public struct EditFailed: DomainEvent {
    public static let type = "render.edit.failed.v1"
    public static let topic = TopicCatalog.renderResults
    public var editId: UUID
    public var userId: UUID
    public var reason: String
    public var failedAt: Date

    public init(editId: UUID, userId: UUID, reason: String, failedAt: Date) {
        self.editId = editId
        self.userId = userId
        self.reason = reason
        self.failedAt = failedAt
    }

    public var aggregateID: String { editId.uuidString.lowercased() }
}
