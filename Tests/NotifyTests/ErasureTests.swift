import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

@testable import Notify

/// A deleted user (`auth.user.deleted.v1`) is erased from notify: devices, delivery log, name and
/// mail; their posts kept as tombstones without an author, so a late like tells no one; the
/// erasure acknowledged on `notify.erasures`.
@Suite("Erasing a deleted user from notify") struct ErasureTests {
    @Test func theDeletedUsersDevicesLogAndNameGoAndALateLikeTellsNoOne() async throws {
        try await NotifyHarness.with { notify in
            let apns = try #require(notify.apns)
            let (author, fan) = (UUID(), UUID())
            let post = UUID()
            _ = try await notify.registerDevice(for: author)
            let fansPhone = try await notify.registerDevice(for: fan)
            try await TestKafka.shared.publish(
                [
                    UserRegistered(userId: author, username: "author", role: .customer, registeredAt: Date()),
                    UserRegistered(userId: fan, username: "fan", role: .customer, registeredAt: Date()),
                    PostCreated(postId: post, userId: author, photoKey: "edit:\(UUID().uuidString.lowercased())", caption: "Sea", createdAt: Date()),
                ],
                source: "/splash/test"
            )
            let postKey = "post:\(post.uuidString.lowercased())"
            try await eventually("the people and the post are known") {
                let people = try await notify.database.count(
                    "notify.people",
                    where: "user_id IN ('\(author.lowercased)', '\(fan.lowercased)')"
                )
                let posts = try await notify.database.count("notify.posts", where: "post_id = '\(post.uuidString.lowercased())'")
                return people == 2 && posts == 1
            }
            try await TestKafka.shared.publish([PhotoLiked(userId: fan, photoId: postKey, likedAt: Date())], source: "/splash/test")
            try await eventually("the like is pushed to the author") { apns.received.count == 1 }

            try await TestKafka.shared.publish([UserDeleted(userId: author, deletedAt: Date())], source: "/splash/auth")
            try await eventually("the author's devices are gone") {
                try await notify.database.count("notify.devices", where: "user_id = '\(author.lowercased)'") == 0
            }
            for table in ["deliveries", "settings", "people"] {
                #expect(try await notify.database.count("notify.\(table)", where: "user_id = '\(author.lowercased)'") == 0, "\(table)")
            }
            #expect(try await notify.database.count("notify.like_windows", where: "author_id = '\(author.lowercased)'") == 0)
            #expect(try await notify.database.count("notify.posts", where: "author_id = '\(author.lowercased)'") == 0)
            #expect(try await notify.database.count("notify.devices", where: "token = '\(fansPhone)'") == 1)
            #expect(try await notify.database.count("notify.people", where: "user_id = '\(fan.lowercased)'") == 1)

            // A like read after the erasure (another liker's partition) tells no one and names no one.
            try await TestKafka.shared.publish(
                [PhotoLiked(userId: UUID(), photoId: postKey, likedAt: Date(), ownerId: author)],
                source: "/splash/test"
            )
            try await Task.sleep(for: .seconds(2))
            #expect(apns.received.count == 1)
            #expect(try await notify.database.count("notify.posts", where: "author_id = '\(author.lowercased)'") == 0)

            let acknowledged = try await notify.database.erasureAcknowledgements(NotifyUserErased.self, of: author, schema: "notify")
            #expect(acknowledged.map(\.type) == [NotifyUserErased.type])
            let erased = try EventJSON.decoder.decode(NotifyUserErased.self, from: Data(try #require(acknowledged.first).data))
            #expect(erased.counts["devices"] == 1 && erased.counts["deliveries"] == 1 && erased.counts["people"] == 1 && erased.counts["posts"] == 1)
            let report = try await EventSchemaCheck.validate(acknowledged)
            #expect(report.contains("validated 1 payload(s), 0 failure(s)"), "\(report)")
        }
    }
}
