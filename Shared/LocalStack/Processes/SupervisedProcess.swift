import AsyncSignals
import Foundation
import ServiceKit

#if canImport(Glibc)
import Glibc
#endif

/// One child of `splash up`: started, its output prefixed, restarted with exponential backoff
/// (1 s doubling to 30 s, back to 1 s after 30 s of good running) whenever it exits on its own,
/// and stopped with a signal, then SIGKILL (with everything it started) if it does not exit in time.
package actor SupervisedProcess {
    package struct Specification: Sendable {
        package var name: String
        package var command: ProcessCommand
        /// What asks the child to stop: SIGTERM, which every Splash program drains on.
        package var stopSignal: Int32
        /// Runs before every start, e.g. to clear a stale status file.
        package var prepare: @Sendable () throws -> Void

        package init(name: String, command: ProcessCommand, stopSignal: Int32 = SIGTERM, prepare: @escaping @Sendable () throws -> Void = {}) {
            self.name = name
            self.command = command
            self.stopSignal = stopSignal
            self.prepare = prepare
        }
    }

    package nonisolated let specification: Specification
    private let output: PrefixedOutput
    private var current: Child?

    /// The running child: its process, how it exits, and when its output has all been written.
    private struct Child {
        var process: ChildProcess
        var exit: OneShot<String>
        var drained: OneShot<Void>
    }
    private var stopping = false
    /// How many times the child has been started.
    package private(set) var starts = 0

    package init(_ specification: Specification, output: PrefixedOutput) {
        self.specification = specification
        self.output = output
    }

    /// Whether the child is running now.
    package var isRunning: Bool { current?.process.isRunning ?? false }

    /// Keeps the child running until `stop` is called or the task is cancelled (which asks the
    /// child to stop with its stop signal, and kills it after `cancellationGrace`); returns once it
    /// has stopped for good.
    package func run() async {
        var backoff = Duration.seconds(1)
        while !stopping, !Task.isCancelled {
            let started = ContinuousClock.now
            let exit: String
            do {
                try specification.prepare()
                exit = try await launchAndWait()
            } catch {
                exit = "before starting (\(error))"
            }
            current = nil
            if stopping || Task.isCancelled { break }

            output.line("exited \(exit); restarting in \(DurationFormat.format(backoff))")
            if started.duration(to: .now) > .seconds(30) { backoff = .seconds(1) }
            await pause(backoff)
            backoff = min(backoff * 2, .seconds(30))
        }
    }

    /// Asks the child to stop with its stop signal; after `timeout`, kills it and what it started.
    /// Returns once it has exited. No restart follows.
    package func stop(timeout: Duration) async {
        stopping = true
        guard let child = current, child.process.isRunning else { return }
        let pid = child.process.processIdentifier
        _ = kill(pid, specification.stopSignal)
        if await !child.exit.arrives(within: timeout) {
            output.line("did not stop within \(DurationFormat.format(timeout)); killing it")
            ProcessTree.kill(pid)
            _ = await child.exit.arrives(within: .seconds(2))
        }
        // Its last lines, unless something it started still holds the output open.
        _ = await child.drained.arrives(within: .seconds(1))
    }

    /// Starts the child and returns, once it has exited, how it exited.
    private func launchAndWait() async throws -> String {
        let process = specification.command.makeProcess()
        let pipe = Pipe()
        process.standardOutput = .pipe(pipe)
        process.standardError = .pipe(pipe)
        process.standardInput = .nullDevice
        let drained = output.attach(to: pipe)
        let exit = OneShot<String>()
        process.terminationHandler = { finished in
            exit.complete(
                finished.terminationReason == .uncaughtSignal
                    ? "on signal \(finished.terminationStatus)"
                    : "with status \(finished.terminationStatus)"
            )
        }
        try process.run()
        current = Child(process: process, exit: exit, drained: drained)
        starts += 1
        let pid = process.processIdentifier
        let signal = specification.stopSignal
        return await withTaskCancellationHandler {
            await exit.value()
        } onCancel: {
            // Asked to stop; a child that ignores the signal is killed after the grace, so a
            // cancelled supervisor never waits on it forever.
            _ = kill(pid, signal)
            Task.detached {
                if await !exit.arrives(within: Self.cancellationGrace) { ProcessTree.kill(pid) }
            }
        }
    }

    /// How long a cancelled child has to stop after its stop signal before it is killed.
    package static let cancellationGrace: Duration = .seconds(5)

    /// Sleeps for `duration`, waking early when a stop is requested.
    private func pause(_ duration: Duration) async {
        let end = ContinuousClock.now + duration
        while !stopping, !Task.isCancelled, ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
