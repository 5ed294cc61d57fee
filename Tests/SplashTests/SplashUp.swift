import AsyncHTTPClient
import AsyncSignals
import Foundation
import Identity
import LocalStack
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests that run `splash up`, whose services take the fixed local ports (8080–8085): one at
/// a time.
@Suite(.serialized) enum LocalStackOnFixedPorts {}

/// `splash up` as a developer runs it, started by a test: the real binary, a data folder of its
/// own, a free Postgres port, and `--exit-with-parent` so a test run that crashes leaves nothing
/// behind. Killed, with everything it started, when released.
final class SplashUp: Sendable {
    /// The `splash` binary built beside this test bundle (`swift build --build-tests` builds both).
    static let executable = builtExecutable("splash")

    let dataDirectory: URL
    let postgresPort: Int
    let output: CapturedOutput
    let process: ChildProcess
    /// The exit status, once `splash` has exited.
    let exited = OneShot<Int32>()

    init() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "build splash first: swift build --build-tests")
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("splash-up-\(UUID().uuidString.prefix(8))")
        postgresPort = freePort()
        output = try CapturedOutput()
        // No simulated deliveries: these tests look at the stack itself.
        process = ProcessCommand(
            Self.executable,
            ["up", "--data-dir", dataDirectory.path, "--postgres-port", String(postgresPort), "--exit-with-parent", String(getpid())],
            environment: ["SPLASH_SIMULATOR": "off"]
        ).makeProcess()
        process.standardOutput = .file(output.handle)
        process.standardError = .file(output.handle)
        let exited = exited
        process.terminationHandler = { exited.complete($0.terminationStatus) }
        try process.run()
    }

    deinit {
        if process.isRunning { ProcessTree.kill(process.processIdentifier) }
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// Waits for `splash up` to say it is up. Alone it takes seconds; among the whole suite on two
    /// cores, starting seven processes (tracking seeding 350 restaurants) has taken over 90 s.
    func waitUntilUp() async throws {
        try await waitUntilReady("splash up", timeout: .seconds(240)) { [output] in output.text.contains("Splash is up") }
    }

    /// Waits until every built service answers ready on its port, and the gateway can check tokens
    /// (it has auth's keys: a token signed by a key auth never had is refused with 401, not 503).
    func waitUntilServing() async throws {
        try await waitUntilUp()
        for service in ServiceCatalog.all
        where FileManager.default.isExecutableFile(
            atPath: Self.executable.deletingLastPathComponent().appendingPathComponent(service.executable).path
        ) {
            try await waitUntilReady(service.executable, timeout: .seconds(90)) {
                (try? await HTTPClient.shared.get(url: "http://127.0.0.1:\(service.port)/readyz").get())?.status == .ok
            }
        }
        let stranger = try testAccessToken(key: .generate(), issuer: "http://localhost:8080/auth/v1")
        try await waitUntilReady("the gateway's token checks", timeout: .seconds(60)) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:8080/v1/edits")
            request.headers.add(name: "Authorization", value: "Bearer \(stranger)")
            return (try? await HTTPClient.shared.execute(request, timeout: .seconds(5)))?.status == .unauthorized
        }
    }
}
