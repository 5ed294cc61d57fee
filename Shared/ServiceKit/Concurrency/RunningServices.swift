import Logging
import ServiceLifecycle

/// Runs `services` in one `ServiceGroup` for the length of `body`, started in order and before
/// `body` begins (`startingInOrder`), then shuts them down gracefully in reverse order (as SIGTERM
/// would) and waits until they have stopped. For tools and tests that
/// need services only while they do one job; a service's own executable uses `ServiceMain`.
/// A service that finishes on its own (a consumer that read to the end) is not an error; one that
/// throws ends the group and the error is rethrown.
package func withRunningServices<Result: Sendable>(
    _ services: [any Service],
    logger: Logger = Logger(label: "test"),
    _ body: () async throws -> Result
) async throws -> Result {
    let (services, allStarted) = startingInOrder(services)
    let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0, successTerminationBehavior: .ignore) },
            logger: logger
        )
    )
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        let result: Result
        do {
            await allStarted.value()
            result = try await body()
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
        return result
    }
}
