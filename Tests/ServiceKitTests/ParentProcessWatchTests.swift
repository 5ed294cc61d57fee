import Foundation
import ServiceKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Stopping with splash")
struct ParentProcessWatchTests {
    @Test func endsAtOnceWhenTheNamedProcessIsNotOurParent() async {
        // A minute between checks: returning well before one shows it did not wait for a check.
        let watch = ParentProcessWatch(parent: getpid(), interval: .seconds(60))
        #expect(!watch.parentIsAlive)
        let start = ContinuousClock.now
        await watch.run()
        #expect(start.duration(to: .now) < .seconds(30))
    }

    @Test func keepsWatchingWhileTheParentLives() async throws {
        let watch = ParentProcessWatch(parent: getppid(), interval: .milliseconds(20))
        #expect(watch.parentIsAlive)
        let watching = Task { await watch.run() }
        try await Task.sleep(for: .milliseconds(300))
        // Still running after 15 checks: cancel it to finish the test.
        watching.cancel()
        await watching.value
    }
}
