import Database
import EventBus
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// One notification for one device, as the sender takes it from the queue.
struct Delivery: Sendable, Equatable {
    var id: Int64
    /// `apns-id`: the same for every attempt, so Apple shows a resent notification once.
    var apnsID: UUID
    var deviceToken: String
    var topic: String
    var environment: DeviceEnvironment
    var channel: DeliveryChannel
    var collapseID: String?
    var priority: Int
    var payload: String
    /// `apns-expiration`: fixed when it was made (the event's time + 1 h); it is not sent after.
    var expiresAt: Date
    /// Attempts so far, this one included.
    var attempts: Int
}

/// What a notification is about, as the delivery log records it: the event that made it (or, for
/// likes gathered in a window, the window's close), its type and its time — the expiry counts
/// from it.
struct Occasion: Sendable, Equatable {
    var id: UUID
    var type: String
    var time: Date
}

extension Occasion {
    init(_ envelope: EventEnvelope) {
        self.init(id: envelope.id, type: envelope.type, time: envelope.time)
    }
}

/// Where a delivery goes: Apple, or (without an APNs key, in the local stack) the sink the
/// console shows as a lock screen.
enum DeliveryChannel: String, Sendable {
    case apns, sink
}

/// How one attempt ended.
enum DeliveryOutcome: Sendable, Equatable {
    case delivered(status: Int?)
    /// Refused for good: logged with Apple's reason.
    case rejected(status: Int, reason: String)
    /// To be tried again after `delay`, unless it has expired by then.
    case retry(after: Duration, status: Int?, reason: String)
    /// Its expiry passed before it could go.
    case expired
}

/// The deliveries table as a queue: notifications are added in the inbox's transaction of the
/// event that made them, the sender claims what is due under a lease (a sender that dies leaves
/// its claims to be taken again when the lease runs out), and each ends in the log as delivered,
/// rejected or expired.
struct DeliveryQueue: Sendable {
    let client: PostgresClient
    /// Where every delivery goes: APNs, or the sink without an APNs key.
    let channel: DeliveryChannel
    /// An occasion older than this is logged `expired`, not sent.
    let maxAge: Duration
    let logger: Logger
    /// How long a claim holds before another sender may take the delivery again.
    var lease: Duration = .seconds(30)

    /// Addresses `notifications` to their recipients' devices, on `connection` (the inbox's
    /// transaction of the event they are about): one delivery per device whose owner has the
    /// setting on, expiring an hour after the occasion. The devices are read under a share lock,
    /// so an erasure deleting them waits for this transaction and then deletes its deliveries too
    /// (`UserErasure`), or has deleted them first and none is made. One older than `maxAge` is logged
    /// `expired`, not sent: a backlog after an outage is not replayed to lock screens. Each device
    /// gets the words in its locale's language (`Language`).
    /// - Returns: how many deliveries are due now.
    @discardableResult
    func enqueue(
        _ notifications: [Notification],
        about occasion: Occasion,
        now: Date = Date(),
        on connection: PostgresConnection
    ) async throws -> Int {
        let stale = now.timeIntervalSince(occasion.time) > maxAge.seconds
        let expiresAt = occasion.time.addingTimeInterval(3_600)
        var due = 0
        for notification in notifications {
            // The payload in each language, the device's locale choosing (English when it names
            // none notify speaks): one statement still addresses every device.
            var payloads: [String: String] = [:]
            for language in Language.allCases { payloads[language.rawValue] = try notification.payload(in: language).json() }
            let byLanguage = String(decoding: try JSONEncoder().encode(payloads), as: UTF8.self)
            let column = notification.setting.rawValue
            let rows = try await connection.query(
                """
                INSERT INTO deliveries (apns_id, event_id, event_type, user_id, device_token, topic, environment, channel, kind,
                                        collapse_id, priority, payload, expires_at, status, finished_at)
                SELECT notify_apns_id(\(occasion.id), d.token), \(occasion.id), \(occasion.type), d.user_id, d.token, d.topic, d.environment,
                       \(channel.rawValue), \(notification.kind), \(notification.collapseID), \(notification.priority),
                       coalesce(\(byLanguage)::jsonb ->> lower(split_part(replace(d.locale, '_', '-'), '-', 1)), \(byLanguage)::jsonb ->> 'en'),
                       \(expiresAt), CASE WHEN \(stale) THEN 'expired' ELSE 'pending' END,
                       CASE WHEN \(stale) THEN clock_timestamp() END
                FROM devices d LEFT JOIN settings s ON s.user_id = d.user_id
                WHERE d.user_id = \(notification.recipient)
                  AND coalesce((to_jsonb(s) ->> \(column))::boolean, true)
                FOR SHARE OF d
                ON CONFLICT (apns_id) DO NOTHING
                RETURNING status
                """,
                logger: logger
            )
            for try await status in rows.decode(String.self) where status == "pending" { due += 1 }
        }
        if stale, !notifications.isEmpty {
            logger.info("Event too old to notify of; logged as expired", metadata: ["event.id": "\(occasion.id)", "event.type": "\(occasion.type)"])
        }
        return due
    }

    /// Takes up to `limit` due deliveries under a lease, counting the attempt.
    func claim(limit: Int) async throws -> [Delivery] {
        try await client.withServiceTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE deliveries SET status = 'sending', attempts = attempts + 1,
                       lease_until = clock_timestamp() + make_interval(secs => \(lease.seconds))
                WHERE id IN (
                    SELECT id FROM deliveries
                    WHERE (status = 'pending' AND next_attempt_at <= clock_timestamp())
                       OR (status = 'sending' AND lease_until <= clock_timestamp())
                    ORDER BY next_attempt_at LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                RETURNING id, apns_id, device_token, topic, environment, channel, collapse_id, priority, payload, expires_at, attempts
                """,
                logger: logger
            )
            var claimed: [Delivery] = []
            for try await row in rows {
                let (id, apnsID, token, topic, environment, channel, collapseID, priority, payload, expiresAt, attempts) =
                    try row.decode((Int64, UUID, String, String, String, String, String?, Int, String, Date, Int).self)
                claimed.append(
                    Delivery(
                        id: id,
                        apnsID: apnsID,
                        deviceToken: token,
                        topic: topic,
                        environment: DeviceEnvironment(rawValue: environment) ?? .production,
                        channel: DeliveryChannel(rawValue: channel) ?? .sink,
                        collapseID: collapseID,
                        priority: priority,
                        payload: payload,
                        expiresAt: expiresAt,
                        attempts: attempts
                    )
                )
            }
            return claimed
        }
    }

    /// Records how each attempt ended, in one statement: done (delivered, rejected, expired) or,
    /// for a retry, due again after its delay — or expired, when that is past its expiry.
    func finish(_ outcomes: [(delivery: Delivery, outcome: DeliveryOutcome)]) async throws {
        guard !outcomes.isEmpty else { return }
        // One row per outcome: the status it leaves, Apple's status (0: none), the error ('': none)
        // and, for a retry, the delay.
        let rows: [(id: Int64, status: String, apnsStatus: Int, error: String, delay: Double)] = outcomes.map { delivery, outcome in
            switch outcome {
            case .delivered(let status): (delivery.id, "delivered", status ?? 0, "", 0)
            case .rejected(let status, let reason): (delivery.id, "rejected", status, reason, 0)
            case .retry(let delay, let status, let reason): (delivery.id, "pending", status ?? 0, reason, delay.seconds)
            case .expired: (delivery.id, "expired", 0, "", 0)
            }
        }
        let (ids, statuses, apnsStatuses, errors, delays) = (
            rows.map(\.id), rows.map(\.status), rows.map(\.apnsStatus), rows.map(\.error), rows.map(\.delay)
        )
        try await client.withServiceTransaction(logger: logger) { connection in
            // A retry whose next attempt would come after its expiry ends as expired now.
            try await connection.query(
                """
                UPDATE deliveries d SET
                    status = CASE WHEN o.status = 'pending' AND n.next_at >= d.expires_at THEN 'expired' ELSE o.status END,
                    next_attempt_at = CASE WHEN o.status = 'pending' THEN n.next_at ELSE d.next_attempt_at END,
                    finished_at = CASE WHEN o.status = 'pending' AND n.next_at < d.expires_at THEN NULL ELSE clock_timestamp() END,
                    apns_status = nullif(o.apns_status, 0), error = nullif(o.error, ''), lease_until = NULL
                FROM unnest(\(ids)::bigint[], \(statuses)::text[], \(apnsStatuses)::integer[], \(errors)::text[], \(delays)::float8[])
                     AS o(id, status, apns_status, error, delay)
                     CROSS JOIN LATERAL (SELECT clock_timestamp() + make_interval(secs => o.delay) AS next_at) AS n
                WHERE d.id = o.id
                """,
                logger: logger
            )
        }
    }

    /// Removes a device Apple says is gone (410 Unregistered, 400 BadDeviceToken), unless it was
    /// registered again after Apple's `timestamp` (then the token is valid once more).
    func forget(device token: String, unregisteredAt: Date?) async throws {
        try await client.withServiceTransaction(logger: logger) { connection in
            try await connection.query(
                "DELETE FROM devices WHERE token = \(token) AND (\(unregisteredAt)::timestamptz IS NULL OR updated_at <= \(unregisteredAt))",
                logger: logger
            )
        }
    }

    /// Deletes the log of deliveries finished longer than `age` ago.
    /// - Returns: how many it deleted.
    @discardableResult
    func purge(finishedBefore age: Duration) async throws -> Int {
        try await client.withServiceTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM deliveries WHERE finished_at < clock_timestamp() - make_interval(secs => \(age.seconds)) RETURNING 1
                ) SELECT count(*) FROM gone
                """,
                logger: logger
            )
            var count = 0
            for try await n in rows.decode(Int.self) { count = n }
            return count
        }
    }
}

/// The APNs environment a device's app was built against.
enum DeviceEnvironment: String, Sendable, CaseIterable {
    case production, sandbox
}
