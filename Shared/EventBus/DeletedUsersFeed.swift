import AsyncSignals
import Contracts
import Foundation
import Identity
import Kafka
import Logging
import ServiceKit
import ServiceLifecycle

/// Reads `auth.user.deleted.v1` into `DeletedUsers`, so that this process refuses a deleted user's
/// still-valid access tokens within moments of the deletion — and, started again, still refuses
/// those of the last hour: it reads `auth.users` back one `DeletedUsers.window` before it reports
/// ready.
///
/// Two consumers of groups of their own that commit nothing: one live from the end as of its
/// assignment, then, once that one holds every partition, one that reads the topic back to the end
/// as of *its* assignment and stops — so the two overlap, and no deletion falls between them
/// (recording one twice changes nothing). `DeletedUsers` keeps only the deletions of the last
/// hour. The read-back starts at the topic's beginning, not at a time: the broker the tests run
/// (librdkafka's mock cluster) answers every offset-for-time lookup with the end, so a start time
/// could not be tested. `auth.users` is compacted (one record per user), so that is one record per
/// account of the last 30 days.
package struct DeletedUsersFeed: Service {
    let events: EventBusSettings
    let name: String
    let deletedUsers: DeletedUsers
    /// Told of each deletion as it is read (live or read back): the gateway closes the user's
    /// connections.
    let onDeletion: @Sendable (UUID) -> Void
    let logger: Logger
    /// Completed once the last hour has been read.
    private let caughtUp = OneShot<Void>()

    package init(
        events: EventBusSettings,
        name: String,
        deletedUsers: DeletedUsers,
        logger: Logger,
        onDeletion: @escaping @Sendable (UUID) -> Void = { _ in }
    ) {
        self.events = events
        self.name = name
        self.deletedUsers = deletedUsers
        self.onDeletion = onDeletion
        self.logger = logger
    }

    /// `/readyz`: ready once the last hour's deletions are known.
    package var readiness: ReadinessCheck {
        ReadinessCheck("deleted-users") { [caughtUp] in
            guard caughtUp.isComplete else { throw NotCaughtUp() }
        }
    }

    private struct NotCaughtUp: Error, CustomStringConvertible {
        var description: String { "the last hour of auth.users has not been read yet" }
    }

    package func run() async throws {
        // librdkafka blocks its caller at times: never on an event loop.
        try await withTaskExecutorPreference(globalConcurrentExecutor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                let live = OneShot<Void>()
                let suffix = "\(name)-\(UUID().uuidString.prefix(8).lowercased())"
                group.addTask {
                    var configuration = self.configuration(group: "deleted-users-\(suffix)")
                    configuration.startAt = .latest
                    try await consume(configuration, assigned: live)
                }
                group.addTask {
                    // Not cut short by a shutdown that comes first (a OneShot's wait is not).
                    while await !live.arrives(within: .milliseconds(250)) {
                        if Task.isCancelled || Task.isShuttingDownGracefully { return }
                    }
                    var configuration = self.configuration(group: "deleted-users-back-\(suffix)")
                    configuration.startAt = .earliest
                    configuration.stopsAtEnd = true
                    try await consume(configuration, assigned: nil)
                    caughtUp.complete(())
                    logger.info("Read back the last hour of account deletions", metadata: ["deleted_users": "\(deletedUsers.count)"])
                }
                try await group.waitForAll()
            }
        }
    }

    private func configuration(group: String) -> KafkaConsumerConfiguration {
        var configuration = events.consumer(clientID: group, group: group, topics: [TopicCatalog.authUsers])
        configuration.commitsOffsets = false
        configuration.closeTimeout = .seconds(3)
        configuration.revocationDrainTimeout = .seconds(1)
        return configuration
    }

    /// Reads until shutdown (or the end, when the configuration stops there); completes `assigned`
    /// once every partition of `auth.users` is this consumer's.
    private func consume(_ configuration: KafkaConsumerConfiguration, assigned: OneShot<Void>?) async throws {
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await consumer.run() }
            var partitions = 0
            for await partition in consumer.partitions {
                partitions += 1
                if partitions >= TopicCatalog.authUsers.partitions { assigned?.complete(()) }
                group.addTask {
                    for await message in partition {
                        handle(message)
                        partition.markProcessed(message)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    private func handle(_ message: KafkaMessage) {
        guard let envelope = try? EventEnvelope(message), envelope.type == UserDeleted.type,
            let deleted = try? envelope.decode(UserDeleted.self)
        else { return }
        deletedUsers.record(deleted.userId, deletedAt: deleted.deletedAt)
        onDeletion(deleted.userId)
    }
}
