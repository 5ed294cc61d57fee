import ArgumentParser
import Foundation
import LocalStack
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `splash up`: Postgres, the broker and every built service, until Ctrl-C.
struct UpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Run the local stack: Postgres, the Kafka broker, then every service executable that has been built.",
        discussion:
            "Output is prefixed with each part's name. A part that crashes is restarted with backoff. Ctrl-C stops everything in reverse order within 10 seconds."
    )

    @OptionGroup var data: DataDirectoryOption

    @Option(help: "Port of the local Postgres (127.0.0.1 only).")
    var postgresPort: Int = 5433

    @Option(
        help:
            "Stop everything when the process with this id is no longer our parent (a test run that starts splash up passes its own, so a run that crashes leaves no stack holding the ports)."
    )
    var exitWithParent: Int32?

    func run() async throws {
        bootstrapLogging()
        let plan = try LocalStackPlan(dataDirectory: data.dataDir, postgresPort: postgresPort)
        let services = plan.builtServices()
        let nameWidth = ([8] + services.map(\.service.executable.count)).max()!
        let supervisor = ProcessSupervisor(nameWidth: nameWidth)
        let colored = isatty(1) == 1
        let logger = Logger(label: "splash")

        let startFailure: (any Error)? = try await withThrowingTaskGroup(of: Void.self) { group in
            var failure: (any Error)?
            do {
                let postgres = await supervisor.add(try await plan.postgres())
                group.addTask { await postgres.run() }
                try await plan.prepareDatabase(isAlive: { await postgres.isRunning }, logger: logger)

                let kafka = await supervisor.add(plan.kafka())
                group.addTask { await kafka.run() }
                try await waitUntilReady("kafka", timeout: .seconds(30)) { plan.kafkaBootstrap() != nil }
                let bootstrap = plan.kafkaBootstrap() ?? ""

                // Started together (a service that needs another, as tracking's seeding needs auth,
                // asks again until it answers), so the stack is up in the time of its slowest service.
                for (service, executable) in services {
                    let child = await supervisor.add(try plan.service(service, executable: executable, kafkaBootstrap: bootstrap, colored: colored))
                    group.addTask { await child.run() }
                }
                for (service, _) in services {
                    try await waitUntilReady(service.executable, timeout: .seconds(90)) { acceptsConnections(port: service.port) }
                }
                // Deliveries moving through Helsinki with nothing else to do; SPLASH_SIMULATOR=off for none.
                let settings = ProcessInfo.processInfo.environment
                if settings["SPLASH_SIMULATOR"] != "off",
                    let simulator = try plan.simulator(
                        services: services.map(\.service),
                        speed: Double(settings["SPLASH_SIMULATOR_SPEED"] ?? "") ?? 1,
                        colored: colored
                    )
                {
                    let child = await supervisor.add(simulator)
                    group.addTask { await child.run() }
                }
                printSummary(plan: plan, bootstrap: bootstrap, services: services.map(\.service))
                await waitForStop(exitingWithParent: exitWithParent)
                say("Stopping…")
            } catch {
                failure = error
            }
            await supervisor.stopAll(budget: .seconds(10))
            try await group.waitForAll()
            return failure
        }
        if let startFailure {
            say("splash: \(startFailure)")
            throw ExitCode.failure
        }
    }

    private func printSummary(plan: LocalStackPlan, bootstrap: String, services: [LocalService]) {
        var lines = [
            "",
            "Splash is up:",
            "  postgres  127.0.0.1:\(plan.postgresPort)  database \(plan.database.name), one role per service (passwords in \(plan.secrets.directory.path))",
            "  kafka     \(bootstrap)  (also in \(plan.kafkaBootstrapFile.path))",
        ]
        for service in services {
            lines.append("  \(service.executable.padding(toLength: 9, withPad: " ", startingAt: 0)) http://127.0.0.1:\(service.port)")
        }
        if services.isEmpty {
            lines.append("  (no service executables are built yet)")
        }
        lines.append("Press Ctrl-C to stop.")
        say(lines.joined(separator: "\n"))
    }
}
