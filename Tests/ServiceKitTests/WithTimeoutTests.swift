import Foundation
import ServiceKit
import Synchronization
import Testing

@Suite struct WithTimeoutTests {
    struct Late: Error {}
    struct Broken: Error {}

    @Test func anOperationInTimeGivesItsResultOrItsError() async throws {
        #expect(try await withTimeout(.seconds(5), error: Late()) { 42 } == 42)
        await #expect(throws: Broken.self) {
            try await withTimeout(.seconds(5), error: Late()) { () async throws -> Int in throw Broken() }
        }
    }

    /// An operation that does not react to cancellation (as a query on a connection whose server
    /// went silent): the caller is answered at the deadline all the same, and the operation is left
    /// to end by itself.
    @Test func theDeadlineHoldsWhenTheOperationIgnoresCancellation() async throws {
        let finished = Mutex(false)
        let start = ContinuousClock.now
        await #expect(throws: Late.self) {
            try await withTimeout(.milliseconds(200), error: Late()) {
                // Sleeps on a thread, deaf to cancellation, for 2 s.
                await withCheckedContinuation { continuation in
                    Thread.detachNewThread {
                        Thread.sleep(forTimeInterval: 2)
                        finished.withLock { $0 = true }
                        continuation.resume()
                    }
                }
                return 1
            }
        }
        let waited = ContinuousClock.now - start
        // Well before the operation's 2 s, with room for a machine busy with other suites (1.06 s
        // was seen under make test's parallel phase).
        #expect(waited < .milliseconds(1_500), "answered after \(waited)")
        #expect(finished.withLock { $0 } == false)
        try await Task.sleep(for: .seconds(2.5))
        #expect(finished.withLock { $0 }, "the abandoned operation ran on to its end")
    }
}
