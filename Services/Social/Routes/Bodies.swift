import CatalogClient
import Contracts
import Foundation
import ResourceAPI
import ServiceKit

/// An image a client can show: a link, its size, and when the link stops working (`nil` for an
/// Unsplash image, hotlinked from Unsplash and never re-hosted).
struct MediaBody: Encodable, Sendable, Equatable {
    var url: String
    var width: Int
    var height: Int
    var expiresAt: Date?

    private enum CodingKeys: String, CodingKey { case url, width, height, expiresAt }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(width, forKey: .width)
        try container.encode(height, forKey: .height)
        try container.encode(expiresAt, forKey: .expiresAt)
    }
}

/// A photo as lists show it: its key, and what is known of it — an Unsplash photo's URLs and
/// attribution, or a link to an edit's or a post's image (`media` null when it is no longer there).
struct PhotoBody: Encodable, Sendable, Equatable {
    var photoKey: String
    var kind: String
    var unsplash: CatalogPhoto?
    var media: MediaBody?
    var thumbnails: ThumbnailsBody?
}

/// An image's list sizes: a 200 px square and a 640 px wide one.
struct ThumbnailsBody: Encodable, Sendable, Equatable {
    var small: String
    var medium: String
}

/// `PUT|GET /v1/likes/{photoKey}`.
struct LikeStateBody: Encodable, Sendable {
    var photoKey: String
    var count: Int
    var likedByMe: Bool
}

/// An entry of "My Collection" (`GET /v1/likes`).
struct LikedPhotoBody: Encodable, Sendable {
    var photoKey: String
    var likedAt: Date
    var photo: PhotoBody
}

struct CollectionBody: Encodable, Sendable {
    var id: String
    var ownerId: String
    var title: String
    var description: String
    var `private`: Bool
    var photoCount: Int
    var createdAt: Date
    var updatedAt: Date
    /// Its ETag's version: what `If-Match` names to change it only as it was read.
    var version: Int
}

/// An entry of `GET /v1/collections/{id}/photos`, in the order added.
struct CollectionPhotoBody: Encodable, Sendable {
    var photoKey: String
    var addedAt: Date
    var photo: PhotoBody
}

/// A post as the feed, an author's list and `GET /v1/posts/{id}` show it.
struct PostBody: Encodable, Sendable {
    struct Author: Encodable, Sendable {
        var id: UUID
        var username: String?
        var avatarUrl: String?

        private enum CodingKeys: String, CodingKey { case id, username, avatarUrl }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(username, forKey: .username)
            try container.encode(avatarUrl, forKey: .avatarUrl)
        }
    }

    var id: UUID
    var author: Author
    var photo: PhotoRef
    var photoKey: String
    var caption: String
    var media: MediaBody
    var thumbnails: ThumbnailsBody?
    var likeCount: Int
    var likedByMe: Bool
    var createdAt: Date
}

// The feed's bodies write their JSON directly (`JSONWritable`, keys in sorted order); the
// contract test holds the output equal to the encoder's.

extension MediaBody: JSONWritable {
    func write(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("expiresAt")
            writer.date(expiresAt)
            writer.key("height")
            writer.integer(height)
            writer.key("url")
            writer.string(url)
            writer.key("width")
            writer.integer(width)
        }
    }
}

extension PostBody: JSONWritable {
    func write(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("author")
            writer.object { writer in
                writer.key("avatarUrl")
                writer.string(author.avatarUrl)
                writer.key("id")
                writer.uuid(author.id)
                writer.key("username")
                writer.string(author.username)
            }
            writer.key("caption")
            writer.string(caption)
            writer.key("createdAt")
            writer.date(createdAt)
            writer.key("id")
            writer.uuid(id)
            writer.key("likeCount")
            writer.integer(likeCount)
            writer.key("likedByMe")
            writer.bool(likedByMe)
            writer.key("media")
            media.write(to: &writer)
            writer.key("photo")
            writer.object { writer in
                switch photo {
                case .edit(let id):
                    writer.key("editId")
                    writer.uuid(id)
                case .object(let key):
                    writer.key("objectKey")
                    writer.string(key)
                case .unsplash(let id):
                    writer.key("unsplashPhotoId")
                    writer.string(id)
                }
            }
            writer.key("photoKey")
            writer.string(photoKey)
            if let thumbnails {
                writer.key("thumbnails")
                writer.object { writer in
                    writer.key("medium")
                    writer.string(thumbnails.medium)
                    writer.key("small")
                    writer.string(thumbnails.small)
                }
            }
        }
    }
}

// Each body as the domain value it shows.

extension MediaBody {
    init(_ link: MediaLink) {
        url = link.url
        width = link.width
        height = link.height
        expiresAt = link.expiresAt
    }
}

extension PhotoBody {
    init(_ photo: ShownPhoto) {
        photoKey = photo.key.description
        kind = PhotoResolver.kind(photo.key)
        unsplash = photo.unsplash
        media = photo.media.map(MediaBody.init)
        thumbnails = photo.thumbnails.map(ThumbnailsBody.init)
    }
}

extension ThumbnailsBody {
    init(_ thumbnails: Thumbnails) {
        small = thumbnails.small
        medium = thumbnails.medium
    }
}

extension LikedPhotoBody {
    init(_ liked: LikedPhoto) {
        photoKey = liked.photo.key.description
        likedAt = liked.likedAt
        photo = PhotoBody(liked.photo)
    }
}

extension CollectionBody {
    init(_ collection: PhotoCollection) {
        id = collection.id.lowercased
        ownerId = collection.ownerID.lowercased
        title = collection.title
        description = collection.description
        self.private = collection.isPrivate
        photoCount = collection.photoCount
        createdAt = collection.createdAt
        updatedAt = collection.updatedAt
        version = collection.version
    }
}

extension CollectionPhotoBody {
    init(_ collected: CollectedPhoto) {
        photoKey = collected.key
        addedAt = collected.addedAt
        photo = PhotoBody(collected.photo)
    }
}

extension PostBody {
    init(_ post: Post) {
        id = post.id
        author = Author(id: post.author.id, username: post.author.username, avatarUrl: post.author.avatarURL)
        photo = post.photo
        photoKey = post.photoKey
        caption = post.caption
        media = MediaBody(post.media)
        thumbnails = post.media.thumbnails.map(ThumbnailsBody.init)
        likeCount = post.likeCount
        likedByMe = post.likedByMe
        createdAt = post.createdAt
    }
}
