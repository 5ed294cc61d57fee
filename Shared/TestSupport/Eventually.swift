import LocalStack

/// Polls `condition` until it holds, failing after `timeout`: for effects that arrive
/// asynchronously (events, projections, collectors). A condition that throws is not met yet.
package func eventually(_ what: String, timeout: Duration = .seconds(30), _ condition: @Sendable () async throws -> Bool) async throws {
    try await waitUntilReady(what, timeout: timeout) { (try? await condition()) ?? false }
}
