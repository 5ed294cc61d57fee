import AsyncSignals
import Foundation

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

    /// A child process set up to run this command (not yet started).
    package func makeProcess() -> ChildProcess {
        ChildProcess(self)
    }

    /// Runs the command to completion and returns its combined output, without blocking a thread
    /// of the concurrency pool (the output is read on a thread of its own).
    /// - Throws: `ProcessCommand.Failure` with the output when it exits with a non-zero status.
    @discardableResult
    package func runToCompletion() async throws -> String {
        let process = makeProcess()
        let pipe = Pipe()
        process.standardOutput = .pipe(pipe)
        process.standardError = .pipe(pipe)
        process.standardInput = .nullDevice
        let exit = OneShot<Int32>()
        process.terminationHandler = { exit.complete($0.terminationStatus) }
        try process.run()
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
