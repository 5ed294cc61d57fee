import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird server on loopback, for the fakes tests stand up in place of other services
/// (Unsplash, photo-catalog, an upstream of the gateway).
package struct TestServer: Sendable {
    package let port: Int
    private let shutdown: @Sendable () async -> Void

    /// Serves `router` on `port` (0: any free port) and returns once it listens.
    /// - Throws: `TestServerError.didNotStart` when the server stopped before binding.
    package static func start(_ router: Router<BasicRequestContext>, port: Int = 0, label: String) async throws -> TestServer {
        let (ports, reported) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { reported.yield($0.localAddress?.port ?? 0) },
            logger: Logger(label: label)
        )
        let group = ServiceGroup(configuration: .init(services: [application], logger: Logger(label: label)))
        let task = Task {
            defer { reported.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else { throw TestServerError.didNotStart(label) }
        return TestServer(port: bound) {
            await group.triggerGracefulShutdown()
            _ = await task.result
        }
    }

    private init(port: Int, shutdown: @escaping @Sendable () async -> Void) {
        self.port = port
        self.shutdown = shutdown
    }

    /// Stops serving and waits until the port is closed.
    package func stop() async {
        await shutdown()
    }
}

package enum TestServerError: Error {
    case didNotStart(String)
}
