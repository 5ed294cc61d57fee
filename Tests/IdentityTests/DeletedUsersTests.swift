import Foundation
import Identity
import Testing

@Suite struct DeletedUsersTests {
    @Test func deletionsAreRememberedForTheWindowAndListedAsTokensNameThem() {
        let users = DeletedUsers(window: .seconds(3_600))
        let now = Date()
        let (recent, old, never) = (UUID(), UUID(), UUID())
        users.record(recent, deletedAt: now.addingTimeInterval(-60), now: now)
        users.record(old, deletedAt: now.addingTimeInterval(-7_200), now: now)
        #expect(users.contains(recent, now: now) && !users.contains(old, now: now) && !users.contains(never, now: now))
        #expect(users.recent(now: now) == [recent.uuidString.lowercased()])
        // An hour on, the one remembered has left the window too.
        #expect(users.recent(now: now.addingTimeInterval(3_600)).isEmpty && !users.contains(recent, now: now.addingTimeInterval(3_600)))
    }
}
