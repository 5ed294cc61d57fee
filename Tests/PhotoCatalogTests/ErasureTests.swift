import Contracts
import EventBus
import Foundation
import TestSupport
import Testing

/// A deleted user (`auth.user.deleted.v1`) is erased from photo-catalog: their id leaves the
/// download queue (a reported download goes; one Unsplash has yet to hear of stays, under no one's
/// id, and is still reported), nothing of anyone else touched, and the erasure acknowledged on
/// `catalog.erasures`; their still-valid token is refused.
@Suite("Erasing a deleted user from photo-catalog")
struct CatalogErasureTests {
    @Test func theDownloadQueueForgetsTheUserAndStillReportsTheirPendingUse() async throws {
        try await CatalogHarness.with { catalog in
            let (ana, ben) = (UUID(), UUID())
            #expect(try await catalog.reportDownload("Reported", bearer: try catalog.token(user: ana)).status == 202)
            #expect(try await catalog.reportDownload("Reported", bearer: try catalog.token(user: ben)).status == 202)
            try await catalog.eventually("both reported") { try await catalog.count("downloads", where: "state = 'reported'") == 2 }
            // Unsplash fails for now: Ana's second download waits in the queue.
            catalog.unsplash.set(mode: .failing)
            #expect(try await catalog.reportDownload("Pending", bearer: try catalog.token(user: ana)).status == 202)

            try await TestKafka.shared.publish([UserDeleted(userId: ana, deletedAt: Date())], source: "/splash/auth")
            try await catalog.eventually("ana erased", timeout: .seconds(30)) {
                try await catalog.count("downloads", where: "user_id = '\(ana.uuidString.lowercased())'") == 0
            }
            #expect(try await catalog.count("downloads", where: "user_id = '\(ben.uuidString.lowercased())'") == 1)
            #expect(try await catalog.count("downloads", where: "photo_id = 'Pending' AND state = 'pending'") == 1)
            let acknowledged = try await catalog.database.erasureAcknowledgements(CatalogUserErased.self, of: ana, schema: "catalog")
            #expect(acknowledged.map(\.type) == [CatalogUserErased.type])
            let erased = try EventJSON.decoder.decode(CatalogUserErased.self, from: Data(try #require(acknowledged.first).data))
            #expect(erased.counts == ["downloads": 1, "pendingDownloads": 1])
            let report = try await EventSchemaCheck.validate(acknowledged)
            #expect(report.contains("validated 1 payload(s), 0 failure(s)"), "\(report)")

            // Unsplash is back: the use is still reported, under no one's id.
            catalog.unsplash.set(mode: .normal)
            try await catalog.eventually("the pending use reported", timeout: .seconds(30)) {
                try await catalog.count("downloads", where: "photo_id = 'Pending' AND state = 'reported'") == 1
            }
            // Ana's still-valid token is refused; Ben's works.
            try await catalog.eventually("ana's token refused") {
                try await catalog.reportDownload("Later", bearer: try catalog.token(user: ana)).status == 401
            }
            #expect(try await catalog.reportDownload("Later", bearer: try catalog.token(user: ben)).status == 202)
        }
    }
}
