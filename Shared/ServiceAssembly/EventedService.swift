import Contracts
import Database
import EventBus
import Kafka
import KeySetClient
import Logging
import PostgresNIO
import ResourceAPI
import ServiceKit
import ServiceLifecycle

/// What a Splash service that keeps state and speaks on Kafka stands on, built alike for every
/// one: its Postgres pool, its Kafka producer, its outbox relay and outbox, its inbox, and the
/// consumers it reads other services' events with.
///
/// ```swift
/// let base = try await EventedService.prepare("social", schema: "social", migrations: …, topics: …, settings: config.standard, runtime: runtime)
/// var parts = base.applicationParts()
/// parts.services += [base.consumer(…), …]
/// ```
package struct EventedService: Sendable {
    /// The service's name: its Kafka client id, its logger's label, its outbox's `source`.
    package let name: String
    package let client: PostgresClient
    /// Publishes the outbox's rows, and sends consumers' dead letters.
    package let producer: KafkaProducer
    package let relay: OutboxRelay
    /// Where the service's transactions put their events (the relay is woken at each commit).
    package let outbox: Outbox
    package let inbox: Inbox
    package let settings: StandardSettings
    package let logger: Logger

    /// Makes the service's storage ready (its migrations and the event bus's tables in `schema`,
    /// then `topics` when it creates them), then builds its parts.
    /// - Parameter client: the pool's configuration, when it is not the settings' own.
    /// - Throws: when a migration does not apply, Kafka refuses the topics or the producer cannot
    ///   be made.
    package static func prepare(
        _ name: String,
        schema: String,
        migrations: [Migration],
        topics: [Topic],
        settings: StandardSettings,
        client: PostgresClient.Configuration? = nil,
        logger: Logger
    ) async throws -> EventedService {
        try await prepareServiceStorage(
            schema: schema,
            migrations: migrations,
            database: settings.database,
            events: settings.events,
            topics: topics,
            logger: logger
        )
        let client = PostgresClient(configuration: client ?? settings.database.client, backgroundLogger: logger)
        let producer = try KafkaProducer(configuration: settings.events.producer(clientID: name), logger: logger)
        let relay = try OutboxRelay(schema: schema, client: client, producer: producer, configuration: settings.events.outbox, logger: logger)
        return EventedService(
            name: name,
            client: client,
            producer: producer,
            relay: relay,
            outbox: try Outbox(schema: schema, service: name, relay: relay),
            inbox: try Inbox(schema: schema, client: client, logger: logger),
            settings: settings,
            logger: logger
        )
    }

    /// The application's parts so far: `/readyz` probes Postgres and Kafka, and the pool, the
    /// producer and the relay run in that order — so at shutdown the relay stops before the
    /// producer it publishes with, and consumers added after them stop first of all.
    package func applicationParts(metrics: ServiceMetrics) -> ServiceApplicationParts {
        var parts = ServiceApplicationParts(name: name, http: settings.http, logger: logger, metrics: metrics)
        parts.readiness = [.postgres(client), .kafka(producer)]
        parts.services = [client, producer, relay]
        return parts
    }

    /// A consumer of `group`'s topics whose `apply` writes each event's effect in the inbox's
    /// transaction — done for the service itself (`app.service` on, which the row-level security
    /// of a schema with such work lets see every row) — so a redelivered event has it once; a
    /// failing event is retried, then dead-lettered, as the event bus's settings say.
    /// - Parameter inboxName: the consumer's name in the inbox (the group's by default).
    package func consumer(
        group: String,
        topics: [Topic],
        registry: EventRegistry,
        inboxName: String? = nil,
        apply: @escaping @Sendable (ReceivedEvent, PostgresConnection) async throws -> Void
    ) -> EventConsumer {
        let handler = inbox.handler(consumer: inboxName ?? group, settings: [("app.service", "on")], apply)
        return consumer(group: group, topics: topics, registry: registry, handler: handler)
    }

    /// A consumer of `group`'s topics with a handler of its own (one that claims work, as a render
    /// worker does, rather than recording an effect).
    package func consumer(
        group: String,
        topics: [Topic],
        registry: EventRegistry,
        clientID: String? = nil,
        handler: @escaping @Sendable (ReceivedEvent) async throws -> Void
    ) -> EventConsumer {
        EventConsumer(
            configuration: settings.events.consumer(clientID: clientID ?? name, group: group, topics: topics),
            registry: registry,
            deadLetters: producer,
            retry: settings.events.retry,
            logger: logger,
            handler: handler
        )
    }
}

extension EventedService {
    /// Makes `keys` refuse the tokens of accounts deleted lately (`DeletedUsersFeed`): the feed
    /// joins the service's parts, and `/readyz` waits until it has read the last hour back.
    package func refusingDeletedUsers(of keys: KeySetCache, in parts: inout ServiceApplicationParts) {
        let feed = DeletedUsersFeed(events: settings.events, name: name, deletedUsers: keys.deletedUsers, logger: logger)
        parts.services.append(feed)
        parts.readiness.append(feed.readiness)
    }
}

extension EventedService {
    /// The consumer of `auth.users` in `group` that erases each deleted user with `erase`, in the
    /// inbox's transaction, once this replica refuses their tokens (`keys`), so no request of
    /// theirs begins after their erasure has.
    package func erasingDeletedUsers(
        group: String,
        inboxName: String,
        keys: KeySetCache,
        erase: @escaping @Sendable (UserDeleted, PostgresConnection) async throws -> Void
    ) -> EventConsumer {
        consumer(group: group, topics: [TopicCatalog.authUsers], registry: EventRegistry([UserDeleted.self]), inboxName: inboxName) {
            received,
            connection in
            guard let deleted = received.event as? UserDeleted else { return }
            keys.deletedUsers.record(deleted.userId, deletedAt: deleted.deletedAt)
            try await erase(deleted, connection)
        }
    }
}

extension EventedService {
    /// Collects, every hour, the delta-sync tombstones of `table` older than any token still
    /// answered (`DeltaSync`'s 30 days, by their `deleted_at`).
    package func collectingTombstones(of table: String) -> RepeatingTask {
        precondition(table.allSatisfy { $0.isLetter || $0 == "_" }, "a table's name")
        return RepeatingTask("\(table) collector", every: .seconds(3_600), logger: logger) { [client, logger] in
            try await client.withServiceTransaction(logger: logger) { connection in
                var bindings = PostgresBindings()
                bindings.append(DeltaSync.tombstoneLifetime)
                _ = try await connection.query(
                    PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE deleted_at < now() - make_interval(secs => $1)", binds: bindings),
                    logger: logger
                )
            }
        }
    }
}
