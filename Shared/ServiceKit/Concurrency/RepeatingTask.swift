import Logging
import ServiceLifecycle

/// Work a service does every `interval` until it shuts down (a collector, a dispatcher, a flush):
/// a round that fails is logged and the next one runs on time.
package struct RepeatingTask: Service {
    let name: String
    let interval: Duration
    let logger: Logger
    let round: @Sendable () async throws -> Void

    package init(_ name: String, every interval: Duration, logger: Logger, round: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.round = round
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await round()
                } catch {
                    logger.warning("\(name) failed; trying again next round", metadata: ["error": "\(error.logDescription)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
