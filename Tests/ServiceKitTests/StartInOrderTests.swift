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

    @Test func eachStartsAfterTheOneBeforeAndTheBodyAfterAll() async throws {
        for _ in 0..<50 {
            let starts = Starts()
            let names = ["client", "producer", "relay", "consumer"]
            let seen = try await withRunningServices(names.map { Recorder(name: $0, starts: starts) as any Service }) {
                starts.names.withLock { $0 }
            }
            #expect(seen == names)
        }
    }
}
