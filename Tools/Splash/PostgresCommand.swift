import ArgumentParser
import LocalStack
import Logging

/// `splash postgres`: the local Postgres alone, until Ctrl-C.
struct PostgresCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres",
        abstract: "Run the local Postgres: initialise it under <data-dir>/postgres on first use, create the database and one role per service schema."
    )

    @OptionGroup var data: DataDirectoryOption

    @Option(help: "Port to listen on (127.0.0.1 only).")
    var port: Int = 5433

    func run() async throws {
        bootstrapLogging()
        let plan = try LocalStackPlan(dataDirectory: data.dataDir, postgresPort: port)
        let supervisor = ProcessSupervisor(nameWidth: 8)
        let postgres = await supervisor.add(try await plan.postgres())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await postgres.run() }
            do {
                try await plan.prepareDatabase(isAlive: { await postgres.isRunning }, logger: Logger(label: "splash"))
                say(
                    """
                    Postgres is ready on 127.0.0.1:\(port), database \(plan.database.name).
                    Roles: \(ServiceCatalog.all.compactMap(\.role).joined(separator: ", ")); passwords in \(plan.secrets.directory.path).
                    Press Ctrl-C to stop.
                    """
                )
                _ = await waitForStopSignal()
            } catch {
                say("splash: \(error)")
            }
            await supervisor.stopAll()
            try await group.waitForAll()
        }
    }
}
