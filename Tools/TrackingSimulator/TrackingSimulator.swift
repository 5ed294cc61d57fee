import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOPosix
import RoadNetwork
import ServiceKit

/// `tracking-simulator`: drivers (and with `--customers`, customers and a kitchen) using Splash
/// through the gateway exactly as the apps do, on the roads of central Helsinki.
@main
struct TrackingSimulator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tracking-simulator",
        abstract: "Simulated drivers (and customers) for the delivery tracker, through the gateway like the apps.",
        discussion: """
            Accounts are made through auth's admin API with AUTH_SERVICE_TOKEN (or AUTH_SERVICE_TOKEN_FILE): \
            sim-driver-<n>@simulator.splash.example (drivers), sim-customer-<n>@… and sim-kitchen@… (an admin that moves \
            the simulated orders through the kitchen). Their passwords derive from the token, so a restarted simulator \
            signs in as the same people. `make run` starts it unless SPLASH_SIMULATOR=off.
            """
    )

    @Option(help: "The gateway's base URL.")
    var gateway = "http://127.0.0.1:8080"

    @Option(help: "How many drivers.")
    var drivers = 5

    @Option(help: "How many customers placing orders (0: none; orders come from elsewhere).")
    var customers = 0

    @Option(help: "Seconds between two positions of a driver.")
    var interval: Double = 1

    @Option(help: "How much faster than real time the simulated people live (distance per interval, pauses); recordedAt stays real.")
    var speed: Double = 1

    @Option(help: "Seconds (simulated) between two orders of a customer.")
    var orderEvery: Double = 120

    @Option(help: "Seed of the random choices (start points, jitter, orders).")
    var seed: UInt64 = 24

    @Option(help: "The apikey Supabase clients send (GATEWAY_ANON_KEY); any, in the local stack.")
    var anonKey = "anon"

    func validate() throws {
        guard (0...200).contains(drivers), (0...200).contains(customers) else { throw ValidationError("--drivers and --customers: 0 to 200") }
        guard interval >= 0.05, speed > 0, speed <= 100, orderEvery >= 1 else {
            throw ValidationError("--interval ≥ 0.05, 0 < --speed ≤ 100, --order-every ≥ 1")
        }
    }

    func run() async throws {
        LogSettings(format: .text, level: .info, color: .auto).bootstrapLoggingSystem()
        let logger = Logger(label: "tracking-simulator")
        let reader = ConfigurationReader(ProcessInfo.processInfo.environment)
        guard let serviceToken = try reader.optionalSecret("AUTH_SERVICE_TOKEN", expected: "auth's service token") else {
            throw ValidationError("AUTH_SERVICE_TOKEN (or AUTH_SERVICE_TOKEN_FILE) is needed to make the simulated accounts")
        }
        let http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let client = GatewayClient(base: gateway.hasSuffix("/") ? String(gateway.dropLast()) : gateway, http: http)
        let graph = try RoadGraph.helsinki()
        func account(_ name: String, role: String) -> SimulatedAccount {
            SimulatedAccount(email: "\(name)@simulator.splash.example", role: role, serviceToken: serviceToken, gateway: client)
        }
        let driverAccounts = (1...max(drivers, 1)).prefix(drivers).map { account("sim-driver-\($0)", role: "driver") }
        let customerAccounts = (1...max(customers, 1)).prefix(customers).map { account("sim-customer-\($0)", role: "customer") }
        let kitchen = account("sim-kitchen", role: "admin")
        // The gateway and auth may still be starting.
        for account in driverAccounts + customerAccounts + (customers > 0 ? [kitchen] : []) {
            try await retrying(logger) { try await account.create(serviceToken: serviceToken) }
        }
        logger.info("simulating", metadata: ["drivers": "\(drivers)", "customers": "\(customers)", "speed": "\(speed)", "gateway": "\(client.base)"])
        await withTaskGroup(of: Void.self) { group in
            for (index, account) in driverAccounts.enumerated() {
                let driver = SimulatedDriver(
                    account: account,
                    gateway: client,
                    graph: graph,
                    interval: .milliseconds(Int(interval * 1_000)),
                    speed: speed,
                    seed: seed &+ UInt64(index) &* 7_919,
                    logger: logger
                )
                group.addTask { await driver.run() }
                // On shift for as long as it runs: present on the drivers' channel.
                let presence = DriverPresence(account: account, gateway: client.base, anonKey: anonKey, logger: logger)
                group.addTask { await presence.run() }
            }
            if customers > 0 {
                let people = SimulatedCustomers(
                    customers: customerAccounts,
                    kitchen: kitchen,
                    gateway: client,
                    graph: graph,
                    orderEvery: .milliseconds(Int(orderEvery * 1_000)),
                    speed: speed,
                    seed: seed &+ 1,
                    logger: logger
                )
                group.addTask { await people.run() }
            }
        }
        try await http.shutdown()
    }

    private func retrying(_ logger: Logger, _ body: () async throws -> Void) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            do {
                return try await body()
            } catch  where ContinuousClock.now < deadline {
                logger.info("the gateway is not ready yet; trying again", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}
