import AsyncSignals
import Foundation
import LocalStack
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Our own child processes (posix_spawn, a reaping thread): what the stack and the tests launch
/// everything with.
@Suite("Child processes")
struct ChildProcessTests {
    static let shell = URL(fileURLWithPath: "/bin/sh")

    @Test func aChildInheritsItsThreeStreamsAndNoOtherDescriptorOfOurs() async throws {
        // A descriptor without close-on-exec, as Foundation's pipes and files are.
        let descriptor = open("/dev/null", O_RDONLY)
        try #require(descriptor > 2)
        defer { close(descriptor) }
        let listing = try await ProcessCommand(URL(fileURLWithPath: "/bin/ls"), ["-1", "/proc/self/fd"]).runToCompletion()
        let open = Set(listing.split(separator: "\n").compactMap { Int32($0) })
        // 3 is the directory ls itself is reading.
        #expect(open.isSubset(of: [0, 1, 2, 3]), "the child had \(open.sorted()) open")
        #expect(!open.contains(descriptor))
    }

    @Test func reportsHowTheChildEnded() async throws {
        for (script, status, reason) in [
            ("exit 0", 0, ChildProcess.TerminationReason.exit), ("exit 3", 3, .exit), ("kill -KILL $$", SIGKILL, .uncaughtSignal),
        ] {
            let process = ProcessCommand(Self.shell, ["-c", script]).makeProcess()
            let ended = OneShot<Void>()
            process.terminationHandler = { _ in ended.complete(()) }
            try process.run()
            #expect(process.processIdentifier > 0)
            await ended.value()
            #expect(!process.isRunning)
            #expect(process.terminationStatus == status, "\(script)")
            #expect(process.terminationReason == reason, "\(script)")
        }
    }

    @Test func aFailingCommandThrowsWithItsOutput() async throws {
        let failure = await #expect(throws: ProcessCommand.Failure.self) {
            try await ProcessCommand(Self.shell, ["-c", "echo broken >&2; exit 4"]).runToCompletion()
        }
        #expect(failure?.status == 4)
        #expect(failure?.output == "broken\n")
    }

    @Test func environmentAdditionsAndTheWorkingDirectoryReachTheChild() async throws {
        let output = try await ProcessCommand(
            Self.shell,
            ["-c", #"echo "$SPLASH_CHILD_TEST $(pwd)""#],
            environment: ["SPLASH_CHILD_TEST": "added"],
            workingDirectory: URL(fileURLWithPath: "/tmp")
        ).runToCompletion()
        #expect(output == "added /tmp\n")
    }

    @Test func aMissingExecutableIsAnErrorNotACrash() throws {
        let process = ProcessCommand(URL(fileURLWithPath: "/nonexistent/splash-child")).makeProcess()
        #expect(throws: ChildProcess.LaunchError.self) { try process.run() }
        #expect(!process.isRunning)
    }

    @Test func terminateAndWaitUntilExit() throws {
        let process = ProcessCommand(URL(fileURLWithPath: "/bin/sleep"), ["30"]).makeProcess()
        try process.run()
        #expect(process.isRunning)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGTERM)
    }
}
