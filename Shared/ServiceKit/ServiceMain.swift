import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceLifecycle

/// What `ServiceMain` gives a service's `buildApplication`: its logger and metrics.
package struct ServiceRuntime: Sendable {
    package var name: String
    package var logger: Logger
    package var metrics: ServiceMetrics

    package init(name: String, logger: Logger, metrics: ServiceMetrics) {
        self.name = name
        self.logger = logger
        self.metrics = metrics
    }
}

/// The body of every service's `main.swift`:
///
/// ```swift
/// await ServiceMain.run("auth", configuration: AuthConfiguration.self, build: buildApplication)
/// ```
///
/// Reads the configuration from the environment (a bad value prints what is wrong and exits with
/// status 2), installs logging and metrics, builds the application and runs it until SIGTERM or
/// SIGINT. In-flight requests then have the configuration's `SHUTDOWN_GRACE` to finish before the
/// rest is cancelled. A failure to start (a migration that does not apply, say) exits with status 1.
/// Started by `splash up` (`SPLASH_PARENT_PID` set), the service also stops when `splash` is gone.
package enum ServiceMain {
    /// A configuration that cannot start the service: the one line to print and the exit status.
    package struct ConfigurationFailure: Error, Equatable {
        package var message: String
        /// 2, the conventional status for a usage error.
        package var exitStatus: Int32 { 2 }
    }

    /// Everything a service process reads from its environment.
    package struct LoadedConfiguration<Configuration: ServiceConfiguration> {
        package var log: LogSettings
        /// `SPLASH_PARENT_PID`: set by `splash up`; the service stops when that process is no
        /// longer its parent.
        package var parentProcess: Int32?
        package var service: Configuration
    }

    /// Reads the log settings, the parent process and the service's configuration from
    /// `environment`, every variable through one `ConfigurationReader` (given `log`, it records
    /// their names).
    package static func loadConfiguration<Configuration: ServiceConfiguration>(
        _ name: String,
        _ type: Configuration.Type,
        environment: [String: String],
        log: ConfigurationReadLog? = nil
    ) -> Result<LoadedConfiguration<Configuration>, ConfigurationFailure> {
        let reader = ConfigurationReader(environment, log: log)
        do {
            return .success(
                LoadedConfiguration(
                    log: try LogSettings(from: reader),
                    parentProcess: try reader.optionalInteger("SPLASH_PARENT_PID", in: 1...Int(Int32.max)).map(Int32.init),
                    service: try Configuration(from: reader)
                )
            )
        } catch {
            return .failure(ConfigurationFailure(message: "\(name): configuration error: \(error)"))
        }
    }

    /// - Parameter tasksOnEventLoops: run the service's tasks on NIO's event loops
    ///   (`EventLoopTaskExecutor`) instead of Swift's global executor: for a service whose work
    ///   is moving bytes between sockets and never blocks.
    package static func run<Configuration: ServiceConfiguration, App: ApplicationProtocol>(
        _ name: String,
        configuration: Configuration.Type,
        tasksOnEventLoops: Bool = false,
        build: (Configuration, ServiceRuntime) async throws -> App
    ) async -> Never {
        let loaded: LoadedConfiguration<Configuration>
        switch loadConfiguration(name, Configuration.self, environment: ProcessInfo.processInfo.environment) {
        case .success(let configuration):
            loaded = configuration
        case .failure(let failure):
            FileHandle.standardError.write(Data((failure.message + "\n").utf8))
            exit(failure.exitStatus)
        }

        let config = loaded.service
        if let loops = config.http.eventLoops {
            // Before anything creates the group.
            NIOSingletons.groupLoopCountSuggestion = loops
        }
        loaded.log.bootstrapLoggingSystem()
        let metrics = ServiceMetrics()
        MetricsSystem.bootstrap(metrics.factory)
        let logger = Logger(label: name)

        do {
            let application = try await build(config, ServiceRuntime(name: name, logger: logger, metrics: metrics))
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: application)]
            if let parent = loaded.parentProcess {
                services.append(.init(service: ParentProcessWatch(parent: parent), successTerminationBehavior: .gracefullyShutdownGroup))
            }
            var groupConfiguration = ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
            groupConfiguration.maximumGracefulShutdownDuration = config.http.shutdownGrace
            groupConfiguration.maximumCancellationDuration = .seconds(5)
            let group = ServiceGroup(configuration: groupConfiguration)
            if tasksOnEventLoops {
                try await withTaskExecutorPreference(EventLoopTaskExecutor()) { try await group.run() }
            } else {
                try await group.run()
            }
            logger.info("\(name) stopped")
            exit(0)
        } catch {
            logger.critical("\(name) stopped: \(error.logDescription)")
            exit(1)
        }
    }
}
