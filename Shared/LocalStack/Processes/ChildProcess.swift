import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process, started with `posix_spawn` and reaped by a thread of its own: the part of
/// Foundation's `Process` the stack and its tests use, without its launch.
///
/// On Linux, `Process.run()` lists `/proc/self/fd` to close every inherited descriptor, and it
/// copies each entry's whole 256-byte name field although glibc's entry is only as long as the
/// name. An entry at the end of glibc's buffer, before an unmapped page, makes that copy crash
/// the process: a bad read in `memcpy` under `Process.run()`, which crashed whole test runs
/// (swift-corelibs-foundation #5472, fixed upstream after the toolchain we use). Here the child
/// closes those descriptors itself (`posix_spawn_file_actions_addclosefrom_np`), so nothing is
/// listed.
///
/// Configure it (streams, handler) before `run()`, from one task, as with `Process`; its state
/// afterwards may be read from anywhere.
package final class ChildProcess: @unchecked Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stream: Sendable {
        /// The parent's own.
        case inherit
        /// /dev/null.
        case nullDevice
        /// An open file, e.g. a log. (Foundation's `FileHandle.nullDevice` has no descriptor of
        /// its own: it counts as `.nullDevice`.)
        case file(FileHandle)
        /// The child's end of a pipe (the writing end for output, the reading end for input);
        /// the parent's copy of that end is closed once the child runs, so the other end sees the
        /// end of the stream when the child exits.
        case pipe(Pipe)
    }

    package enum TerminationReason: Sendable, Equatable {
        case exit
        case uncaughtSignal
    }

    package let command: ProcessCommand
    package var standardInput = Stream.inherit
    package var standardOutput = Stream.inherit
    package var standardError = Stream.inherit
    /// Called once, on the reaping thread, after the child has exited.
    package var terminationHandler: (@Sendable (ChildProcess) -> Void)?

    private enum State {
        case notStarted
        case running(pid_t)
        case exited(pid_t, status: Int32, reason: TerminationReason)
    }
    private let state = Mutex(State.notStarted)
    private let exited = DispatchSemaphore(value: 0)

    package init(_ command: ProcessCommand) {
        self.command = command
    }

    /// The child's process id (0 before `run()`).
    package var processIdentifier: pid_t {
        state.withLock {
            switch $0 {
            case .notStarted: 0
            case .running(let pid), .exited(let pid, _, _): pid
            }
        }
    }

    package var isRunning: Bool {
        state.withLock { if case .running = $0 { true } else { false } }
    }

    /// The exit status, or the number of the signal that ended the child (0 while it runs).
    package var terminationStatus: Int32 {
        state.withLock { if case .exited(_, let status, _) = $0 { status } else { 0 } }
    }

    package var terminationReason: TerminationReason {
        state.withLock { if case .exited(_, _, let reason) = $0 { reason } else { .exit } }
    }

    /// Sends SIGTERM.
    package func terminate() { send(SIGTERM) }

    /// Sends SIGINT, as Ctrl-C would.
    package func interrupt() { send(SIGINT) }

    private func send(_ signal: Int32) {
        if case .running(let pid) = state.withLock({ $0 }) { _ = kill(pid, signal) }
    }

    /// Blocks the calling thread until the child has exited (not for tasks: use the handler).
    package func waitUntilExit() {
        guard case .running = state.withLock({ $0 }) else { return }
        exited.wait()
        exited.signal()
    }

    /// Starts the child: its own process group, no signals blocked (the threads Swift concurrency
    /// runs on block most, and a child would inherit that mask and never see SIGTERM), SIGPIPE at
    /// its default, and no descriptor of ours beyond its three streams.
    /// - Throws: `ChildProcess.LaunchError` when it cannot be started (the executable missing, …).
    package func run() throws {
        guard case .notStarted = state.withLock({ $0 }) else { preconditionFailure("a ChildProcess runs once") }
        let environment = ProcessInfo.processInfo.environment.merging(command.environment) { _, new in new }
        let argv = ([command.executable.path] + command.arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        for (stream, target) in [(standardInput, STDIN_FILENO), (standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)] {
            switch stream.childDescriptor(reading: target == STDIN_FILENO) {
            case nil: break
            case let descriptor? where descriptor >= 0:
                try check(posix_spawn_file_actions_adddup2(&actions, descriptor, target), "dup2")
            case _?:
                try check(
                    posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0),
                    "open /dev/null"
                )
            }
        }
        try check(SpawnExtensions.addCloseFrom(&actions, 3), "closefrom")
        if let directory = command.workingDirectory {
            try check(SpawnExtensions.addChdir(&actions, directory.path), "chdir")
        }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        var pid: pid_t = 0
        try check(posix_spawn(&pid, command.executable.path, &actions, &attributes, argv, envp), "spawn")
        state.withLock { $0 = .running(pid) }
        closeChildEnds()
        Thread.detachNewThread { [self, pid] in reap(pid) }
    }

    package struct LaunchError: Error, CustomStringConvertible {
        package var executable: String
        package var step: String
        package var code: Int32
        package var description: String { "cannot start \(executable) (\(step)): \(String(cString: strerror(code)))" }
    }

    private func check(_ result: Int32, _ step: String) throws(LaunchError) {
        guard result == 0 else { throw LaunchError(executable: command.executable.path, step: step, code: result) }
    }

    /// Closes the parent's copies of the pipe ends the child now holds (each pipe once, as output
    /// and errors often share one).
    private func closeChildEnds() {
        var closed = Set<ObjectIdentifier>()
        for (stream, reading) in [(standardInput, true), (standardOutput, false), (standardError, false)] {
            guard case .pipe(let pipe) = stream, closed.insert(ObjectIdentifier(pipe)).inserted else { continue }
            try? (reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting).close()
        }
    }

    private func reap(_ pid: pid_t) {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, 0) } while result == -1 && errno == EINTR
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
        let signal = status & 0x7F
        let outcome: (Int32, TerminationReason) = result == -1 ? (-1, .exit) : signal == 0 ? ((status >> 8) & 0xFF, .exit) : (signal, .uncaughtSignal)
        state.withLock { $0 = .exited(pid, status: outcome.0, reason: outcome.1) }
        exited.signal()
        terminationHandler?(self)
    }
}

extension ChildProcess.Stream {
    /// The descriptor the child's stream is a copy of: `nil` to inherit ours, -1 for /dev/null.
    fileprivate func childDescriptor(reading: Bool) -> Int32? {
        switch self {
        case .inherit: nil
        case .nullDevice: -1
        case .file(let handle): handle.fileDescriptor
        case .pipe(let pipe): (reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting).fileDescriptor
        }
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34) and `…_addchdir_np` (2.29), which
/// its headers declare only under `_GNU_SOURCE`, so Swift does not import them: looked up once.
private enum SpawnExtensions {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ lowest: Int32) -> Int32 {
        guard let function = lookUp("posix_spawn_file_actions_addclosefrom_np", as: AddCloseFrom.self) else { return ENOSYS }
        return function(actions, lowest)
    }

    static func addChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: String) -> Int32 {
        guard let function = lookUp("posix_spawn_file_actions_addchdir_np", as: AddChdir.self) else { return ENOSYS }
        return path.withCString { function(actions, $0) }
    }

    private static func lookUp<Function>(_ name: String, as type: Function.Type) -> Function? {
        // RTLD_DEFAULT: the global symbol scope.
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: type) }
    }
}
