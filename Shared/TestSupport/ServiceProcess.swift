import AsyncHTTPClient
import AsyncSignals
import Foundation
import LocalStack

#if canImport(Glibc)
import Glibc
#endif

/// Executable `name` of this package, built beside the running test bundle or benchmark
/// (`swift build --build-tests` builds them all).
package func builtExecutable(_ name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
}

/// A Splash service as its own process: the executable built beside the running test bundle or
/// benchmark (`swift build --build-tests` builds them all), on a free port, with its output
/// captured.
package final class ServiceProcess: Sendable {
    package let name: String
    package let port: Int
    package let output: CapturedOutput
    private let process: ChildProcess
    private let exited: OneShot<Int32>

    package var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts `executable` with `environment` (plus `HTTP_HOST`/`HTTP_PORT`) and waits for its
    /// `/readyz`.
    /// - Parameter port: the port to serve on (a free one when `nil`), for a service whose
    ///   configuration names its own address. A free port may be taken by another test before the
    ///   service binds it: then the service is started again on another, up to three times.
    /// - Parameter timeout: how long `/readyz` may take: two minutes, as under make test's parallel
    ///   phase a replica's consumers took over one to be given their partitions.
    package init(_ executable: String, environment: [String: String], port: Int? = nil, readyWithin timeout: Duration = .seconds(120)) async throws {
        let binary = builtExecutable(executable)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw ServiceProcessError.notBuilt(binary.path) }
        name = executable
        var attempt = 1
        while true {
            let started = try await Self.start(binary, environment: environment, port: port ?? freePort(), readyWithin: timeout)
            if case .lostItsPort = started.outcome, port == nil, attempt < 3 {
                attempt += 1
                continue
            }
            (self.port, output, process, exited) = (started.port, started.output, started.process, started.exited)
            switch started.outcome {
            case .ready: return
            case .lostItsPort(let text), .exited(let text): throw ServiceProcessError.exited(executable, text)
            case .failed(let error): throw error
            }
        }
    }

    private enum Outcome {
        case ready
        case lostItsPort(String)
        case exited(String)
        case failed(any Error)
    }

    private static func start(
        _ binary: URL,
        environment: [String: String],
        port: Int,
        readyWithin timeout: Duration
    ) async throws
        -> (port: Int, output: CapturedOutput, process: ChildProcess, exited: OneShot<Int32>, outcome: Outcome)
    {
        let output = try CapturedOutput()
        var settings = environment
        settings["HTTP_HOST"] = "127.0.0.1"
        settings["HTTP_PORT"] = String(port)
        settings["LOG_FORMAT"] = "text"
        settings["LOG_COLOR"] = "never"
        // Stops with the test process, even if the test is killed.
        settings["SPLASH_PARENT_PID"] = String(getpid())
        let process = ProcessCommand(binary, [], environment: settings).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        let exited = OneShot<Int32>()
        process.terminationHandler = { exited.complete($0.terminationStatus) }
        try process.run()
        let url = "http://127.0.0.1:\(port)/readyz"
        let outcome: Outcome
        do {
            try await waitUntilReady(binary.lastPathComponent, timeout: timeout) {
                guard !exited.isComplete else { return true }
                // Its own /readyz: not another test's service that took the port first.
                return (try? await HTTPClient.shared.get(url: url).get().status.code) == 200
                    && isListening(pid: process.processIdentifier, port: port)
            }
            if exited.isComplete {
                let text = output.text
                outcome = text.contains("Address already in use") ? .lostItsPort(text) : .exited(text)
            } else {
                outcome = .ready
            }
        } catch {
            outcome = .failed(error)
        }
        if case .ready = outcome {} else { await stop(process, exited: exited) }
        return (port, output, process, exited, outcome)
    }
    /// Whether the process has ended (crashed, or stopped), with its exit status.
    package var exitStatus: Int32? { exited.current }

    /// The process id, for /proc readings such as `ProcessCPU`.
    package var pid: pid_t { process.processIdentifier }

    /// Resident memory now and at its peak so far (`VmRSS`, `VmHWM` of /proc/<pid>/status), in
    /// bytes; nil once the process has exited.
    package func memory() -> (resident: Int, peak: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func kilobytes(_ field: String) -> Int? {
            let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
            return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
        }
        guard let resident = kilobytes("VmRSS"), let peak = kilobytes("VmHWM") else { return nil }
        return (resident * 1024, peak * 1024)
    }

    /// SIGKILL: the process dies mid-work, without closing anything.
    package func kill() async {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = await exited.value()
    }

    /// SIGTERM, then SIGKILL after ten seconds.
    package func stop() async {
        await Self.stop(process, exited: exited)
    }

    private static func stop(_ process: ChildProcess, exited: OneShot<Int32>) async {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGTERM)
        if await !exited.arrives(within: .seconds(10)) {
            Glibc.kill(process.processIdentifier, SIGKILL)
            _ = await exited.value()
        }
    }
}

package enum ServiceProcessError: Error, CustomStringConvertible {
    case notBuilt(String)
    case exited(String, String)

    package var description: String {
        switch self {
        case .notBuilt(let path): "\(path) is not built; run swift build --build-tests"
        case .exited(let name, let output): "\(name) exited while starting:\n\(output)"
        }
    }
}
