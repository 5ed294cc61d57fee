import Contracts
import Foundation

/// A photo posted with a caption, as the feed, an author's list and the post itself show it.
struct Post: Sendable {
    struct Author: Sendable {
        var id: UUID
        var username: String?
        var avatarURL: String?
    }

    var id: UUID
    var author: Author
    /// What the post was made from.
    var photo: PhotoRef
    /// The key the post's photo is liked and collected by.
    var photoKey: String
    var caption: String
    var media: MediaLink
    var likeCount: Int
    var likedByMe: Bool
    var createdAt: Date
}
