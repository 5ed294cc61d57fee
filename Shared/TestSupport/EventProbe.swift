import Contracts
import EventBus
import Foundation
import Logging
import PostgresNIO

/// The event integration tests publish: sequence number `seq` of key `key`.
package struct ProbeEvent: DomainEvent {
    package static let type = "test.probe.recorded.v1"
    package static let topic = Topic("test.probe", partitions: 1, retention: .seconds(3_600))
    package var key: String
    package var seq: Int

    package init(key: String, seq: Int) {
        self.key = key
        self.seq = seq
    }

    package var aggregateID: String { key }
}

/// The effect of a `ProbeEvent` in Postgres, and what tests check about it: each event applied
/// once, each key's events applied in sequence order.
package enum ProbeEffects {
    /// Creates the schema's event-bus tables and the `effects` table.
    package static func prepare(schema: String, client: PostgresClient, logger: Logger) async throws {
        try await client.query("CREATE SCHEMA IF NOT EXISTS \(unescaped: schema)", logger: logger)
        try await EventBusSchema(schema).migrate(on: client, logger: logger)
        try await client.query(
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: schema).effects (
                key text NOT NULL, seq integer NOT NULL, in_order boolean NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT clock_timestamp())
            """,
            logger: logger
        )
    }

    /// Applies `event` on `connection`: records it, and whether it came right after the key's
    /// previous event.
    package static func apply(_ event: ProbeEvent, schema: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO \(unescaped: schema).effects (key, seq, in_order)
            SELECT \(event.key), \(event.seq), coalesce(max(seq), -1) = \(event.seq) - 1
            FROM \(unescaped: schema).effects WHERE key = \(event.key)
            """,
            logger: logger
        )
    }

    package struct Summary: Sendable, Equatable {
        package var effects: Int
        package var distinct: Int
        package var outOfOrder: Int

        package init(effects: Int, distinct: Int, outOfOrder: Int) {
            self.effects = effects
            self.distinct = distinct
            self.outOfOrder = outOfOrder
        }
    }

    package static func summary(schema: String, client: PostgresClient, logger: Logger) async throws -> Summary {
        let rows = try await client.query(
            """
            SELECT count(*)::int, count(DISTINCT (key, seq))::int, count(*) FILTER (WHERE NOT in_order)::int
            FROM \(unescaped: schema).effects
            """,
            logger: logger
        )
        for try await (effects, distinct, outOfOrder) in rows.decode((Int, Int, Int).self) {
            return Summary(effects: effects, distinct: distinct, outOfOrder: outOfOrder)
        }
        return Summary(effects: 0, distinct: 0, outOfOrder: 0)
    }

    /// Polls `summary` until `count` effects exist or `timeout` passes; returns the last summary.
    package static func waitForEffects(
        _ count: Int,
        schema: String,
        client: PostgresClient,
        logger: Logger,
        timeout: Duration
    ) async throws -> Summary {
        let deadline = ContinuousClock.now + timeout
        var latest = try await summary(schema: schema, client: client, logger: logger)
        while latest.effects < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            latest = try await summary(schema: schema, client: client, logger: logger)
        }
        return latest
    }
}
