import Foundation
import TestSupport
import Testing

@Suite("Test servers on free ports")
struct KillableServerTests {
    private func httpServer(port: Int) -> [String] {
        ["python3", "-m", "http.server", "--bind", "127.0.0.1", String(port)]
    }

    @Test func aServerWhosePortIsTakenFailsToStartInsteadOfPassingForTheOther() async throws {
        let port = freePort()
        let first = KillableServer()
        try await first.start("first", httpServer(port: port), port: port)
        defer { first.kill() }
        #expect(first.isRunning)

        // The port answers, but not from the second server's process: its start says so.
        let second = KillableServer()
        await #expect(throws: KillableServerExited.self) {
            try await second.start("second", httpServer(port: port), port: port)
        }
        #expect(!second.isRunning)
        #expect(!isListening(pid: 1, port: port))
    }
}
