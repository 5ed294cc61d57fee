import Database
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// A device that takes push notifications, as its owner registered it.
struct Device: Sendable, Equatable {
    var token: String
    var userID: UUID
    var platform: String
    var topic: String
    var environment: DeviceEnvironment
    var locale: String
    var registeredAt: Date
    var updatedAt: Date
}

/// What a person wants to hear of (every setting on until they change one).
struct NotificationSettings: Sendable, Equatable {
    var orders = true
    var edits = true
    var likes = true
    var emailReceipts = true
}

/// The devices people register and their notification settings.
struct DeviceStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    static let notFound = Problem(status: .notFound, type: "not-found", title: "Not found", detail: "You have no device with this token")

    /// Registers `token` for `user`, or updates it: a token another user had moves to `user` (a
    /// phone changed hands, or its owner signed in as someone else).
    func register(
        _ token: String,
        user: UUID,
        platform: String,
        topic: String,
        environment: DeviceEnvironment,
        locale: String
    ) async throws -> Device {
        // As the service: the row may be another user's until this statement moves it.
        try await client.withServiceTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO devices (token, user_id, platform, topic, environment, locale)
                VALUES (\(token), \(user), \(platform), \(topic), \(environment.rawValue), \(locale))
                ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform, topic = excluded.topic,
                    environment = excluded.environment, locale = excluded.locale, updated_at = clock_timestamp(),
                    registered_at = CASE WHEN devices.user_id = excluded.user_id THEN devices.registered_at ELSE clock_timestamp() END
                RETURNING \(unescaped: Self.columns)
                """,
                logger: logger
            )
            return try Self.device(try await rows.collect().first("the registered device"))
        }
    }

    /// Removes `token` when it is `user`'s.
    /// - Throws: 404 when `user` has no device with this token.
    func unregister(_ token: String, user: UUID) async throws {
        let removed = try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query("DELETE FROM devices WHERE token = \(token) AND user_id = \(user) RETURNING 1", logger: logger).collect().count
        }
        if removed == 0 { throw Self.notFound }
    }

    /// `user`'s devices, newest registration first.
    func devices(of user: UUID) async throws -> [Device] {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM devices WHERE user_id = \(user) ORDER BY registered_at DESC, token",
                logger: logger
            )
            return try await rows.collect().map(Self.device)
        }
    }

    func settings(of user: UUID) async throws -> NotificationSettings {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await settings(of: user, on: connection)
        }
    }

    /// Sets the settings `change` names, keeping the others.
    func changeSettings(of user: UUID, _ change: SettingsChange) async throws -> NotificationSettings {
        try await client.withUserTransaction(userID: user.lowercased, logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO settings (user_id, orders, edits, likes, email_receipts)
                VALUES (\(user), coalesce(\(change.orders), true), coalesce(\(change.edits), true), coalesce(\(change.likes), true),
                        coalesce(\(change.emailReceipts), true))
                ON CONFLICT (user_id) DO UPDATE SET
                    orders = coalesce(\(change.orders), settings.orders), edits = coalesce(\(change.edits), settings.edits),
                    likes = coalesce(\(change.likes), settings.likes), email_receipts = coalesce(\(change.emailReceipts), settings.email_receipts),
                    updated_at = clock_timestamp()
                """,
                logger: logger
            )
            return try await settings(of: user, on: connection)
        }
    }

    private func settings(of user: UUID, on connection: PostgresConnection) async throws -> NotificationSettings {
        let rows = try await connection.query("SELECT orders, edits, likes, email_receipts FROM settings WHERE user_id = \(user)", logger: logger)
        for try await (orders, edits, likes, receipts) in rows.decode((Bool, Bool, Bool, Bool).self) {
            return NotificationSettings(orders: orders, edits: edits, likes: likes, emailReceipts: receipts)
        }
        return NotificationSettings()
    }

    private static let columns = "token, user_id, platform, topic, environment, locale, registered_at, updated_at"

    private static func device(_ row: PostgresRow) throws -> Device {
        let (token, user, platform, topic, environment, locale, registeredAt, updatedAt) =
            try row.decode((String, UUID, String, String, String, String, Date, Date).self)
        return Device(
            token: token,
            userID: user,
            platform: platform,
            topic: topic,
            environment: DeviceEnvironment(rawValue: environment) ?? .production,
            locale: locale,
            registeredAt: registeredAt,
            updatedAt: updatedAt
        )
    }
}
