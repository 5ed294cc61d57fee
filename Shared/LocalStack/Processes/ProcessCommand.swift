import AsyncSignals
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A program to run: its path, arguments and environment additions.
package struct ProcessCommand: Sendable, Equatable {
    package var executable: URL
    package var arguments: [String]
    /// Added to (and overriding) the inherited environment.
    package var environment: [String: String]
    package var workingDirectory: URL?

    package init(_ executable: URL, _ arguments: [String] = [], environment: [String: String] = [:], workingDirectory: URL? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
    }

    /// A `Process` set up to run this command (not yet started).
    package func makeProcess() -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        return process
    }

    /// Starts `process` with no signals blocked.
    ///
    /// `posix_spawn` hands the child the spawning thread's signal mask, and the threads Swift
    /// concurrency runs on block most signals. A child that starts with SIGTERM blocked never sees
    /// the signal meant to stop it (and a shell cannot unblock it), so the mask is cleared around
    /// the spawn.
    ///
    /// Launches are made one at a time. Foundation's `Process` on Linux has known races between
    /// launches on several threads, and one loaded test run crashed inside `Process.run()` (a bad
    /// read in its copying) while other commands were running; a launch takes about a
    /// millisecond, so serializing them costs nothing that matters.
    package static func start(_ process: Process) throws {
        try launching.withLock { _ in
            var empty = sigset_t()
            var previous = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, &previous)
            defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
            try process.run()
        }
    }

    private static let launching = Mutex<Void>(())

    /// Runs the command to completion and returns its combined output, without blocking a thread
    /// of the concurrency pool (the output is read on a thread of its own).
    /// - Throws: `ProcessCommand.Failure` with the output when it exits with a non-zero status.
    @discardableResult
    package func runToCompletion() async throws -> String {
        let process = makeProcess()
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        let exit = OneShot<Int32>()
        process.terminationHandler = { exit.complete($0.terminationStatus) }
        try Self.start(process)
        let output = OneShot<Data>()
        let reading = pipe.fileHandleForReading
        Thread.detachNewThread { output.complete(reading.readDataToEndOfFile()) }
        let status = await exit.value()
        let text = String(decoding: await output.value(), as: UTF8.self)
        guard status == 0 else {
            throw Failure(command: ([executable.path] + arguments).joined(separator: " "), status: status, output: text)
        }
        return text
    }

    package struct Failure: Error, CustomStringConvertible {
        package var command: String
        package var status: Int32
        package var output: String
        package var description: String {
            "\(command) exited with status \(status):\n\(output)"
        }
    }
}
