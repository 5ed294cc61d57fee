import Logging
import PostgresNIO
import ServiceKit

extension PostgresClient {
    /// Runs `body` with a client of its own, started before and shut down after: for start-up work
    /// (migrations) that must be done before the service's own pool and background work run, so
    /// none of them ever sees a schema half made.
    @discardableResult
    package static func withStartupClient<Result: Sendable>(
        _ configuration: PostgresClient.Configuration,
        logger: Logger,
        _ body: (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withRunningServices([client], logger: logger) {
            try await body(client)
        }
    }
}
