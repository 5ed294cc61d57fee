import Foundation

/// `social.photo.liked.v1`: a user liked an Unsplash photo or a post's edit.
public struct PhotoLiked: DomainEvent {
    public static let type = "social.photo.liked.v1"
    public static let topic = TopicCatalog.socialActivity
    public var userId: UUID
    public var photoId: String
    public var likedAt: Date

    public init(userId: UUID, photoId: String, likedAt: Date) {
        self.userId = userId
        self.photoId = photoId
        self.likedAt = likedAt
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

/// `social.post.created.v1`: a user posted an edit with a caption.
public struct PostCreated: DomainEvent {
    public static let type = "social.post.created.v1"
    public static let topic = TopicCatalog.socialActivity
    public var postId: UUID
    public var userId: UUID
    public var editId: UUID
    public var caption: String
    public var createdAt: Date

    public init(postId: UUID, userId: UUID, editId: UUID, caption: String, createdAt: Date) {
        self.postId = postId
        self.userId = userId
        self.editId = editId
        self.caption = caption
        self.createdAt = createdAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `social.collection.changed.v1`: a photo was added to or removed from a user's collection.
public struct CollectionChanged: DomainEvent {
    public enum Change: String, Codable, Sendable { case added, removed }

    public static let type = "social.collection.changed.v1"
    public static let topic = TopicCatalog.socialActivity
    public var userId: UUID
    public var collectionId: UUID
    public var photoId: String
    public var change: Change
    public var changedAt: Date

    public init(userId: UUID, collectionId: UUID, photoId: String, change: Change, changedAt: Date) {
        self.userId = userId
        self.collectionId = collectionId
        self.photoId = photoId
        self.change = change
        self.changedAt = changedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}
