import Foundation
import ServiceKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Stopping with splash")
struct ParentProcessWatchTests {
    @Test func endsAtOnceWhenTheNamedProcessIsNotOurParent() async {
        let watch = ParentProcessWatch(parent: getpid(), interval: .milliseconds(20))
        #expect(!watch.parentIsAlive)
        let start = ContinuousClock.now
        await watch.run()
        #expect(start.duration(to: .now) < .seconds(1))
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
