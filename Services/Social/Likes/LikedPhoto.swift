import Foundation

/// A photo a person likes, as "My Collection" lists it.
struct LikedPhoto: Sendable {
    var photo: ShownPhoto
    var likedAt: Date
}
