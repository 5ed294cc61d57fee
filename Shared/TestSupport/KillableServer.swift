import Foundation
import LocalStack

/// A server process a test support type runs on loopback, and kills (SIGKILL: no goodbye to its
/// connections) to play a server that is down; started again on the same port.
package final class KillableServer: @unchecked Sendable {
    private let lock = NSLock()
    private var process: Process?

    package init() {}

    deinit {
        process?.terminate()
    }

    /// Runs `arguments` (through `/usr/bin/env`, its output discarded) and waits until it
    /// listens on `port`: up to two minutes, as `ServiceProcess` waits (moto, a Python server,
    /// once took over 30 s to start under make test's parallel phase).
    /// - Throws: `KillableServerExited` when the process ends first (as a server does when another
    ///   took its port between `freePort()` and its bind: then someone else answers on the port).
    package func start(_ name: String, _ arguments: [String], port: Int, environment: [String: String]? = nil) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new } }
        try process.run()
        lock.withLock { self.process = process }
        try await waitUntilReady(name, timeout: .seconds(120)) {
            !process.isRunning || isListening(pid: process.processIdentifier, port: port)
        }
        guard process.isRunning else {
            lock.withLock { self.process = nil }
            throw KillableServerExited(name: name, port: port, status: process.terminationStatus)
        }
    }

    /// Whether the process is alive (started, and neither killed nor crashed).
    package var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

    /// Kills the process and waits for it to end.
    package func kill() {
        let process = lock.withLock { () -> Process? in
            defer { self.process = nil }
            return self.process
        }
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A test server that ended while starting, most likely because its port was taken.
package struct KillableServerExited: Error, CustomStringConvertible {
    package var name: String
    package var port: Int
    package var status: Int32

    package var description: String { "\(name) exited with status \(status) while starting on port \(port)" }
}
