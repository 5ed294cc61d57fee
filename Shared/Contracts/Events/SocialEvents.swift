import Foundation

/// `social.photo.liked.v1`: a user liked an Unsplash photo or a post's edit.
public struct PhotoLiked: DomainEvent {
    public static let type = "social.photo.liked.v1"
    public static let topic = TopicCatalog.socialActivity
    public var userId: UUID
    public var photoId: String
    public var likedAt: Date
    /// The post's author when `photoId` is `post:{id}` (so a consumer can tell them without
    /// having seen the post's own event first); absent for other photos and in older events.
    public var ownerId: UUID?

    public init(userId: UUID, photoId: String, likedAt: Date, ownerId: UUID? = nil) {
        self.userId = userId
        self.photoId = photoId
        self.likedAt = likedAt
        self.ownerId = ownerId
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `social.photo.unliked.v1`: a user took a like back.
public struct PhotoUnliked: DomainEvent {
    public static let type = "social.photo.unliked.v1"
    public static let topic = TopicCatalog.socialActivity
    public var userId: UUID
    public var photoId: String
    public var unlikedAt: Date

    public init(userId: UUID, photoId: String, unlikedAt: Date) {
        self.userId = userId
        self.photoId = photoId
        self.unlikedAt = unlikedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `social.post.created.v1`: a user posted a photo with a caption. `photoKey` is what the post's
/// likes count under (`unsplash:<id>`, `edit:<uuid>` or `post:<uuid>`); the post itself, with its
/// media link, is `GET /v1/posts/{postId}`.
public struct PostCreated: DomainEvent {
    public static let type = "social.post.created.v1"
    public static let topic = TopicCatalog.socialActivity
    public var postId: UUID
    public var userId: UUID
    public var photoKey: String
    public var caption: String
    public var createdAt: Date

    public init(postId: UUID, userId: UUID, photoKey: String, caption: String, createdAt: Date) {
        self.postId = postId
        self.userId = userId
        self.photoKey = photoKey
        self.caption = caption
        self.createdAt = createdAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `social.post.deleted.v1`: a user deleted their post (so feeds can drop it).
public struct PostDeleted: DomainEvent {
    public static let type = "social.post.deleted.v1"
    public static let topic = TopicCatalog.socialActivity
    public var postId: UUID
    public var userId: UUID
    public var deletedAt: Date

    public init(postId: UUID, userId: UUID, deletedAt: Date) {
        self.postId = postId
        self.userId = userId
        self.deletedAt = deletedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `social.collection.changed.v1`: a user's collection was created, updated (title, description,
/// privacy) or deleted, or a photo was added to or removed from it (`photoId` then names it).
public struct CollectionChanged: DomainEvent {
    public enum Change: String, Codable, Sendable { case created, updated, deleted, added, removed }

    public static let type = "social.collection.changed.v1"
    public static let topic = TopicCatalog.socialActivity
    public var userId: UUID
    public var collectionId: UUID
    public var change: Change
    public var photoId: String?
    public var `private`: Bool
    public var changedAt: Date

    public init(userId: UUID, collectionId: UUID, change: Change, photoId: String? = nil, private isPrivate: Bool, changedAt: Date) {
        self.userId = userId
        self.collectionId = collectionId
        self.change = change
        self.photoId = photoId
        self.private = isPrivate
        self.changedAt = changedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}
