import AsyncHTTPClient
import AsyncSignals
import Foundation
import LocalStack
#if canImport(Glibc)
import Glibc
#endif

/// A Splash service as its own process: the executable built beside the running test bundle or
/// benchmark (`swift build --build-tests` builds them all), on a free port, with its output
/// captured.
package final class ServiceProcess: Sendable {
    package let name: String
    package let port: Int
    package let output: CapturedOutput
    private let process: ChildProcess
    private let exited = OneShot<Int32>()

    package var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts `executable` with `environment` (plus `HTTP_HOST`/`HTTP_PORT`) and waits for its
    /// `/readyz`.
    /// - Parameter port: the port to serve on (a free one when `nil`), for a service whose
    ///   configuration names its own address.
    package init(_ executable: String, environment: [String: String], port: Int? = nil, readyWithin timeout: Duration = .seconds(60)) async throws {
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw ServiceProcessError.notBuilt(binary.path) }
        name = executable
        self.port = port ?? freePort()
        output = try CapturedOutput()
        var settings = environment
        settings["HTTP_HOST"] = "127.0.0.1"
        settings["HTTP_PORT"] = String(self.port)
        settings["LOG_FORMAT"] = "text"
        settings["LOG_COLOR"] = "never"
        // Stops with the test process, even if the test is killed.
        settings["SPLASH_PARENT_PID"] = String(getpid())
        process = ProcessCommand(binary, [], environment: settings).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        let exited = self.exited
        process.terminationHandler = { exited.complete($0.terminationStatus) }
        try process.run()
        let url = "http://127.0.0.1:\(self.port)/readyz"
        do {
            try await waitUntilReady(executable, timeout: timeout) {
                guard !exited.isComplete else { return true }
                return (try? await HTTPClient.shared.get(url: url).get().status.code) == 200
            }
            if exited.isComplete { throw ServiceProcessError.exited(executable, output.text) }
        } catch {
            await stop()
            throw error
        }
    }

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
