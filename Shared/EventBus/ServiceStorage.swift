import Contracts
import Database
import Kafka
import Logging
import PostgresNIO

/// Makes a service's storage ready before it serves: its schema's migrations and the event bus's
/// tables (outbox, inbox, dead letters) in the same schema, then the topics it publishes and
/// consumes when it is the one to create them (`KAFKA_CREATE_TOPICS`). Safe to run from several
/// replicas at once.
package func prepareServiceStorage(
    schema: String,
    migrations: [Migration],
    database: DatabaseSettings,
    events: EventBusSettings,
    topics: [Topic],
    logger: Logger
) async throws {
    try await PostgresClient.withStartupClient(database.client, logger: logger) { client in
        _ = try await MigrationRunner(schema: schema, migrations: migrations).run(on: client, logger: logger)
        try await EventBusSchema(schema).migrate(on: client, logger: logger)
    }
    if events.createsTopics {
        try await KafkaTopicAdministrator.ensureTopicsExist(topics, bootstrapServers: events.brokers, logger: logger)
    }
}
