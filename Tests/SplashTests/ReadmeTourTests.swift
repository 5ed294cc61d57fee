import AsyncSignals
import Foundation
import LocalStack
import TestSupport
import Testing

extension LocalStackOnFixedPorts {
    /// The root README's tour, run exactly as a newcomer would copy it into a terminal: its code
    /// blocks are read from README.md, not copied here, so a tour command that stops working fails
    /// the build.
    @Suite("The README's tour")
    struct ReadmeTourTests {
        static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md")

        /// The tour's steps, in order: a `sh` block is typed into one shell; a `text` block shows
        /// what the reader then sees, and each `event: <type>` line in it is an event promised to
        /// arrive on the stream an earlier step follows.
        enum Step: Equatable {
            case commands(String)
            case promisedEvents([String])
        }

        static func steps() throws -> [Step] {
            let page = MarkdownDocument(try String(contentsOf: readme, encoding: .utf8))
            let tour = try #require(page.section("A five-minute tour"), "README.md has no section \"A five-minute tour\"")
            return page.codeBlocks.filter { tour.contains($0.line) }.compactMap { block in
                switch block.language {
                case "sh": return .commands(block.text)
                case "text":
                    let events = block.text.split(separator: "\n").compactMap { line -> String? in
                        line.hasPrefix("event: ") ? String(line.dropFirst("event: ".count)).trimmingCharacters(in: .whitespaces) : nil
                    }
                    return events.isEmpty ? nil : .promisedEvents(events)
                default: return nil
                }
            }
        }

        @Test func theTourRunsAsWrittenAndTheEventItPromisesArrives() async throws {
            try await WholeStackTurns.take {
                let steps = try Self.steps()
                #expect(steps.filter { if case .commands = $0 { true } else { false } }.count >= 4, "the tour has too few commands to be one")
                #expect(steps.contains { if case .promisedEvents = $0 { true } else { false } }, "the tour promises no event")

                let stack = try SplashUp()
                defer { withExtendedLifetime(stack) {} }
                try await stack.waitUntilServing()

                let shell = try TourShell()
                for (number, step) in steps.enumerated() {
                    switch step {
                    case .commands(let text):
                        // Every command must succeed: the shell stops at the first that fails, and curl
                        // fails on an HTTP error (the reader would see one).
                        try await shell.run(text, step: number)
                    case .promisedEvents(let events):
                        for event in events {
                            try await shell.waitForOutput("event: \(event)", what: "the promised \(event)")
                        }
                    }
                }
                try await shell.finish()
            }
        }
    }
}

struct StepFailed: Error, CustomStringConvertible {
    var description: String
}

/// One bash, as the reader's terminal: commands typed in step by step, in a folder of its own,
/// stopping at the first command that fails (`set -euo pipefail`), with `curl` failing on HTTP
/// errors. Its output (background jobs' too) is collected as it comes.
final class TourShell: Sendable {
    let output: CapturedOutput
    let process: ChildProcess
    let input = Pipe()
    let exited = OneShot<Int32>()
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tour-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        output = try CapturedOutput()
        process = ProcessCommand(URL(fileURLWithPath: "/bin/bash"), ["--noprofile", "--norc", "-euo", "pipefail"], workingDirectory: directory)
            .makeProcess()
        process.standardInput = .pipe(input)
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        let exited = exited
        process.terminationHandler = { exited.complete($0.terminationStatus) }
        try process.run()
        type(#"curl() { command curl --fail-with-body "$@"; }"# + "\n")
    }

    deinit {
        if process.isRunning { ProcessTree.kill(process.processIdentifier) }
        try? FileManager.default.removeItem(at: directory)
    }

    private func type(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Types `commands` and waits until they have all run.
    func run(_ commands: String, step: Int) async throws {
        let marker = "::tour step \(step) done::"
        type(commands + "\necho '\(marker)'\n")
        try await waitForOutput(marker, what: "step \(step):\n\(commands)\n")
    }

    /// Waits until the output holds `text`; records what the shell printed if it never does.
    func waitForOutput(_ text: String, what: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !output.text.contains(text) {
            if exited.isComplete || ContinuousClock.now > deadline {
                let status = exited.isComplete ? "the shell exited with \(await exited.value())" : "nothing after \(timeout)"
                throw StepFailed(description: "README tour, \(what): \(status). The shell printed:\n\(output.text)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Ends the input; the shell must then exit with status 0 (no job of the tour left running).
    func finish() async throws {
        try input.fileHandleForWriting.close()
        let finished = await exited.arrives(within: .seconds(20))
        #expect(finished, "the shell did not exit when its input ended: a tour job is still running")
        if finished {
            #expect(await exited.value() == 0, "the shell printed:\n\(output.text)")
        }
    }
}
