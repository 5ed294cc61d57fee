import Foundation

/// A named collection of photos, private to its owner or readable by anyone signed in.
struct PhotoCollection: Sendable {
    var id: UUID
    var ownerID: UUID
    var title: String
    var description: String
    var isPrivate: Bool
    var photoCount: Int
    var createdAt: Date
    var updatedAt: Date
    /// Goes up with each change of its title, description or privacy: what `If-Match` names.
    var version: Int
}

/// A photo in a collection, in the order photos were added.
struct CollectedPhoto: Sendable {
    /// The key as it was stored.
    var key: String
    var addedAt: Date
    var photo: ShownPhoto
}
