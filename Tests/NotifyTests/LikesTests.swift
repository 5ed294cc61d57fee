import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@testable import Notify

/// A post's likes told to its author: the first at once, the rest of the window as one push.
@Suite("Likes on a post") struct LikesTests {
    @Test func theFirstLikeIsPushedAtOnceAndTheRestOfTheWindowAsOne() async throws {
        try await NotifyHarness.with(["NOTIFY_LIKE_WINDOW": "6s"]) { notify in
            let apns = try #require(notify.apns)
            let author = UUID()
            let post = UUID()
            let fans = (0..<4).map { _ in UUID() }
            let phone = try await notify.registerDevice(for: author)
            var events: [any DomainEvent] = fans.enumerated().map { index, fan in
                UserRegistered(userId: fan, username: "fan\(index)", role: .customer, registeredAt: Date())
            }
            events.append(
                PostCreated(postId: post, userId: author, photoKey: "edit:\(UUID().uuidString.lowercased())", caption: "Sea", createdAt: Date())
            )
            // The names and the post are known before the likes come (they are on other partitions).
            try await TestKafka.shared.publish(events, source: "/splash/test")
            let ids = fans.map { "'\($0.uuidString.lowercased())'" }.joined(separator: ",")
            try await eventually("the people and the post are known") {
                let people = try await notify.database.count("notify.people", where: "user_id IN (\(ids))")
                let posts = try await notify.database.count("notify.posts", where: "post_id = '\(post.uuidString.lowercased())'")
                return people == 4 && posts == 1
            }
            // The author's own like, and a like of an Unsplash photo: nobody is told.
            var likes = [
                PhotoLiked(userId: author, photoId: "post:\(post.uuidString.lowercased())", likedAt: Date()),
                PhotoLiked(userId: fans[0], photoId: "unsplash:abc", likedAt: Date()),
            ]
            likes += fans.map { PhotoLiked(userId: $0, photoId: "post:\(post.uuidString.lowercased())", likedAt: Date()) }
            try await TestKafka.shared.publish(likes, source: "/splash/test")

            try await eventually("the first like is pushed") { apns.received.count >= 1 }
            let first = try #require(apns.received.first)
            #expect(first.deviceToken == phone)
            // Which fan's like comes first is Kafka's to say (each liker's events are a partition's).
            let firstFan = try #require(fans.indices.first { first.body.contains("fan\($0) liked your post") }, "\(first.body)")
            #expect(first.headers["apns-priority"] == "5")
            #expect(first.headers["apns-collapse-id"] == "post-likes-\(post.uuidString.lowercased())")
            try await eventually("the window's likes are pushed as one when it closes", timeout: .seconds(30)) { apns.received.count >= 2 }
            try await Task.sleep(for: .seconds(1.5))
            let received = apns.received
            #expect(received.count == 2)
            let gathered = received.last?.body ?? ""
            #expect(fans.indices.contains { $0 != firstFan && gathered.contains("fan\($0) and 2 others liked your post") }, "\(gathered)")
            #expect(received.last?.headers["apns-id"] != first.headers["apns-id"])
        }
    }

    @Test func likesAreQuietForAnAuthorWhoTurnedThemOff() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let author = UUID()
            let post = UUID()
            try await notify.registerDevice(for: author)
            #expect(try await notify.call(.patch, "/v1/notification-settings", as: author, json: #"{"likes":false}"#).status == 200)
            try await TestKafka.shared.publish(
                [PostCreated(postId: post, userId: author, photoKey: "unsplash:abc", caption: "", createdAt: Date())],
                source: "/splash/test"
            )
            try await eventually("the post is known") {
                try await notify.database.count("notify.posts", where: "post_id = '\(post.uuidString.lowercased())'") == 1
            }
            try await TestKafka.shared.publish(
                [PhotoLiked(userId: UUID(), photoId: "post:\(post.uuidString.lowercased())", likedAt: Date())],
                source: "/splash/test"
            )
            // The like opens the post's window whatever the setting: once it is there, the like was handled.
            try await eventually("the like is handled") {
                try await notify.database.count("notify.like_windows", where: "post_id = '\(post.uuidString.lowercased())'") == 1
            }
            #expect(try await notify.deliveries().isEmpty)
        }
    }

    @Test func aLikeNamingTheAuthorIsToldBeforeThePostIsKnownAndNotAfterItsDeletion() async throws {
        try await NotifyHarness.with(apns: false) { notify in
            let author = UUID()
            let fan = UUID()
            let (unseen, deleted) = (UUID(), UUID())
            let phone = try await notify.registerDevice(for: author)
            try await TestKafka.shared.publish([PostDeleted(postId: deleted, userId: author, deletedAt: Date())], source: "/splash/test")
            try await eventually("the deleted post's tombstone is kept") {
                try await notify.database.count("notify.posts", where: "post_id = '\(deleted.uuidString.lowercased())' AND deleted") == 1
            }
            // One liker's events are one partition's, read in order: once the second like is
            // told, the first has been handled.
            try await TestKafka.shared.publish(
                [
                    PhotoLiked(userId: fan, photoId: "post:\(deleted.uuidString.lowercased())", likedAt: Date(), ownerId: author),
                    PhotoLiked(userId: fan, photoId: "post:\(unseen.uuidString.lowercased())", likedAt: Date(), ownerId: author),
                ],
                source: "/splash/test"
            )
            try await eventually("the like of a post never announced is told") { try await !notify.deliveries().isEmpty }
            let deliveries = try await notify.deliveries()
            #expect(deliveries.count == 1)
            #expect(deliveries.first?.device == phone)
            #expect(try await notify.database.count("notify.like_windows", where: "post_id = '\(deleted.uuidString.lowercased())'") == 0)
            let learnt = "post_id = '\(unseen.uuidString.lowercased())' AND author_id = '\(author.uuidString.lowercased())'"
            #expect(try await notify.database.count("notify.posts", where: learnt) == 1)
        }
    }
}
