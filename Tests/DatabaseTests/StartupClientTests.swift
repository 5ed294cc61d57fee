import Database
import Logging
import PostgresNIO
import Synchronization
import TestSupport
import Testing

@Suite("A client is running before anything uses it")
struct StartupClientTests {
    /// Counts the warnings a logger is given.
    final class Warnings: Sendable {
        let lines = Mutex<[String]>([])
        var logger: Logger {
            var logger = Logger(label: "client") { _ in Handler(sink: self) }
            logger.logLevel = .warning
            return logger
        }

        struct Handler: LogHandler {
            let sink: Warnings
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .warning
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) { sink.lines.withLock { $0.append(event.message.description) } }
        }
    }

    @Test func aStartupClientsFirstQueryFindsItRunning() async throws {
        let database = try await TestPostgres.shared.makeDatabase()
        let warnings = Warnings()
        for _ in 0..<20 {
            let one = try await PostgresClient.withStartupClient(database.configuration, logger: warnings.logger) { client in
                try await client.query("SELECT 1", logger: warnings.logger).collect().first?.decode(Int.self)
            }
            #expect(one == 1)
        }
        // PostgresNIO: "Trying to lease connection from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet."
        #expect(warnings.lines.withLock { $0 } == [])
    }
}
