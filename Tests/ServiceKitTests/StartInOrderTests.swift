import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization
import Testing

@Suite("Services start in their order")
struct StartInOrderTests {
    final class Starts: Sendable {
        let names = Mutex<[String]>([])
    }

    /// Notes when it starts, then runs until shut down.
    struct Recorder: Service {
        let name: String
        let starts: Starts

        func run() async throws {
            starts.names.withLock { $0.append(name) }
            try? await gracefulShutdown()
        }
    }

    /// The body runs once the last service has been entered: its `run()` is called on its own
    /// task as the body is resumed on another, so what that `run()` does first may land a moment
    /// after the body begins (seen under make test's parallel load). Each service is entered only
    /// once the one before it is about to be — each then runs on its own task, so the first lines
    /// of two neighbours' `run()`s may land in either order (seen too) — and none is left out.
    @Test func eachStartsAfterTheOneBeforeAndTheBodyAfterAll() async throws {
        for _ in 0..<50 {
            let starts = Starts()
            let names = ["client", "producer", "relay", "consumer"]
            let seen = try await withRunningServices(names.map { Recorder(name: $0, starts: starts) as any Service }) {
                starts.names.withLock { $0 }
            }
            // Each name seen at most one place from its own: neighbours may swap, no more.
            let inOrder = seen.enumerated().allSatisfy { position, name in abs((names.firstIndex(of: name) ?? -10) - position) <= 1 }
            #expect(
                seen.count >= names.count - 1 && Set(seen).count == seen.count && inOrder,
                "the body began before the services before the last had started, or out of order: \(seen)"
            )
            let entered = starts.names.withLock { $0 }
            #expect(entered.count == names.count && Set(entered) == Set(names), "every service entered once: \(entered)")
        }
    }
}
