import Contracts
import Foundation
import ServiceKit

/// What a like, a collection entry or a post counts under: `unsplash:<id>` (an Unsplash photo),
/// `edit:<uuid>` (a completed edit) or `post:<uuid>` (a post's uploaded photo).
enum PhotoKey: Hashable, Sendable, CustomStringConvertible {
    case unsplash(String)
    case edit(UUID)
    case post(UUID)

    /// `nil` for text that is not a photo key (ids are compared as UUIDs, in any case).
    init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let value = String(text[text.index(after: colon)...])
        switch text[..<colon] {
        case "unsplash":
            guard UnsplashPhotoID.isValid(value) else { return nil }
            self = .unsplash(value)
        case "edit":
            guard let id = UUID(uuidString: value) else { return nil }
            self = .edit(id)
        case "post":
            guard let id = UUID(uuidString: value) else { return nil }
            self = .post(id)
        default:
            return nil
        }
    }

    var description: String {
        switch self {
        case .unsplash(let id): "unsplash:\(id)"
        case .edit(let id): "edit:\(id.lowercased)"
        case .post(let id): "post:\(id.lowercased)"
        }
    }

    /// A path parameter as a photo key: 422 naming `photoKey` when it is not one.
    static func parameter(_ text: String?) throws -> PhotoKey {
        guard let text = text?.removingPercentEncoding, let key = PhotoKey(text) else {
            throw Problem.validation([FieldError(.parameter("photoKey"), "photoKey: unsplash:{photo id}, edit:{edit id} or post:{post id}")])
        }
        return key
    }
}

/// The photo of a new post, as the client names it: exactly one of an Unsplash photo, a completed
/// edit of theirs, or an object they uploaded to the posts bucket (`posts/{their id}/…`).
enum PhotoRef: Sendable, Equatable, Codable {
    case unsplash(String)
    case edit(UUID)
    case object(String)

    private enum CodingKeys: String, CodingKey { case unsplashPhotoId, editId, objectKey }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let unsplash = try container.decodeIfPresent(String.self, forKey: .unsplashPhotoId)
        let edit = try container.decodeIfPresent(String.self, forKey: .editId)
        let object = try container.decodeIfPresent(String.self, forKey: .objectKey)
        switch (unsplash, edit, object) {
        case (let id?, nil, nil): self = .unsplash(id)
        case (nil, let id?, nil):
            guard let uuid = UUID(uuidString: id) else {
                throw DecodingError.dataCorruptedError(forKey: .editId, in: container, debugDescription: "not an edit id")
            }
            self = .edit(uuid)
        case (nil, nil, let key?): self = .object(key)
        default:
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "exactly one of unsplashPhotoId, editId, objectKey")
            )
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .unsplash(let id): try container.encode(id, forKey: .unsplashPhotoId)
        case .edit(let id): try container.encode(id.lowercased, forKey: .editId)
        case .object(let key): try container.encode(key, forKey: .objectKey)
        }
    }
}
