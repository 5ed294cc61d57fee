import CatalogClient
import Foundation

/// An image a client can show: a link, its size, and when the link stops working (`nil` for an
/// Unsplash image, hotlinked from Unsplash and never re-hosted).
struct MediaLink: Sendable, Equatable {
    var url: String
    var width: Int
    var height: Int
    var expiresAt: Date?
}

/// A photo as a person's lists show it: its key, and what is known of it — an Unsplash photo's
/// data, or a link to an edit's or a post's image (`media` nil when it is no longer there).
struct ShownPhoto: Sendable, Equatable {
    var key: PhotoKey
    var unsplash: CatalogPhoto?
    var media: MediaLink?
}
