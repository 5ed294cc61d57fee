import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit
import ServiceLifecycle

/// A service's application serving on a free loopback port for the length of a test, reached
/// through a real HTTP client over a real socket.
package struct RunningApplication: Sendable {
    /// The port the server is bound to.
    package let port: Int
    private let shutdown: @Sendable () async -> Void

    package init(port: Int, shutdown: @escaping @Sendable () async -> Void) {
        self.port = port
        self.shutdown = shutdown
    }

    /// `http://127.0.0.1:<port>`.
    package var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts a graceful shutdown, as SIGTERM would: the server stops accepting connections and
    /// in-flight requests may finish. Returns at once.
    package func beginShutdown() async {
        await shutdown()
    }

    /// Sends a request and collects the response (bodies up to 16 MiB).
    package func request(
        _ method: HTTPRequest.Method,
        _ path: String,
        headers: [(String, String)] = [],
        body: HTTPClientRequest.Body? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> TestResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .init(rawValue: method.rawValue)
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        if let body { request.body = body }
        let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(timeout.totalNanoseconds))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        var fields: [String: String] = [:]
        for header in response.headers {
            fields[header.name.lowercased(), default: ""] += fields[header.name.lowercased()] == nil ? header.value : ", " + header.value
        }
        return TestResponse(status: Int(response.status.code), headers: fields, body: Data(buffer: bytes))
    }
}

/// A JSON request to `url`, as an app sends one: its status and the answer's JSON object (empty
/// when it is not one). Throws when no answer comes within `timeout` (a dead process, say).
package func jsonRequest(
    _ method: HTTPMethod,
    _ url: String,
    token: String? = nil,
    json: Any? = nil,
    headers: [(String, String)] = [],
    timeout: Duration = .seconds(30)
) async throws -> (status: Int, body: [String: Any]) {
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let json {
        request.headers.add(name: "Content-Type", value: "application/json")
        // Keys in a fixed order: a retry sends the same bytes, as an app resending a request does
        // (a dictionary's order can differ between two copies of it, and an idempotency key
        // compares the body's bytes).
        request.body = .bytes(try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]))
    }
    let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(timeout.totalNanoseconds))
    let data = Data(buffer: try await response.body.collect(upTo: 4 << 20))
    return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
}

/// A response as a test sees it.
package struct TestResponse: Sendable {
    package var status: Int
    /// Header values by lower-cased name (repeated headers joined with `, `).
    package var headers: [String: String]
    package var body: Data

    package var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object.
    package func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            throw TestResponseError.notAJSONObject(text)
        }
        return object
    }
}

enum TestResponseError: Error {
    case notAJSONObject(String)
    case serverDidNotStart
}

/// Runs `application` on a free loopback port (whatever address its configuration names), calls
/// `body` with it, then shuts it down gracefully and waits until it has stopped.
/// - Parameter tasksOnEventLoops: run the application's tasks on the event loops
///   (`EventLoopTaskExecutor`), as `ServiceMain` does for a service that asks for it.
/// - Throws: what `body` throws, or what the application throws while starting or running.
package func withRunningApplication<App: ApplicationProtocol, Result: Sendable>(
    _ application: App,
    tasksOnEventLoops: Bool = false,
    _ body: @Sendable (RunningApplication) async throws -> Result
) async throws -> Result {
    let (ports, portReported) = AsyncStream.makeStream(of: Int.self)
    let wrapped = EphemeralPortApplication(base: application, report: { portReported.yield($0) })
    // Bounded like ServiceMain's: connections still open when the test ends (a client the test
    // left behind after a failure, a stream that never ends) are cancelled instead of holding the
    // shutdown, and the test run, forever. Past the cancellation bound ServiceLifecycle stops the
    // whole test process, so both bounds leave room for a machine busy with the rest of the suite
    // (where a Kafka consumer's leave, say, can take several seconds): 10 s and 5 s were once
    // exceeded there.
    var configuration = ServiceGroupConfiguration(services: [wrapped], logger: Logger(label: "test-application"))
    configuration.maximumGracefulShutdownDuration = .seconds(20)
    configuration.maximumCancellationDuration = .seconds(30)
    let group = ServiceGroup(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask(executorPreference: tasksOnEventLoops ? EventLoopTaskExecutor() : nil) {
            defer { portReported.finish() }
            try await group.run()
        }
        var portIterator = ports.makeAsyncIterator()
        guard let port = await portIterator.next() else {
            // The application stopped before it bound a socket; surface its error.
            try await tasks.next()
            throw TestResponseError.serverDidNotStart
        }
        let running = RunningApplication(port: port, shutdown: { await group.triggerGracefulShutdown() })
        do {
            let result = try await body(running)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}

/// An application bound to `127.0.0.1:0` that reports the port it got.
private struct EphemeralPortApplication<Base: ApplicationProtocol>: ApplicationProtocol {
    typealias Responder = Base.Responder
    let base: Base
    let report: @Sendable (Int) -> Void

    var responder: Base.Responder {
        get async throws { try await base.responder }
    }
    var server: HTTPServerBuilder { base.server }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }
    var configuration: ApplicationConfiguration {
        var configuration = base.configuration
        configuration.address = .hostname("127.0.0.1", port: 0)
        return configuration
    }
    var logger: Logger { base.logger }
    var services: [any Service] { base.services }
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { base.processesRunBeforeServerStart }

    func onServerRunning(_ channel: any Channel) async {
        await base.onServerRunning(channel)
        report(channel.localAddress?.port ?? 0)
    }
}

extension HTTPClient {
    /// A client that answers a redirect as it came (for tests that check one), where `shared`
    /// follows it.
    package static let notFollowingRedirects = HTTPClient(
        eventLoopGroupProvider: .singleton,
        configuration: .init(redirectConfiguration: .disallow)
    )
}
