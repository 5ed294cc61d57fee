import AsyncHTTPClient
import ServiceLifecycle

/// Keeps an `HTTPClient` (the one a `KeySetCache` and the service's own upstream calls share) in a
/// service group: shuts it down once the server has drained.
package struct HTTPClientService: Service {
    package let client: HTTPClient

    package init(client: HTTPClient) {
        self.client = client
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
