import Foundation
import Logging
import NIOCore
import PostgresNIO
import ResourceAPI
import ServiceKit

/// One cached Unsplash answer.
struct CachedAnswer: Sendable {
    /// 200, or 404 for a photo Unsplash does not have.
    var status: Int
    var body: ByteBuffer
    /// Unsplash's `X-Total`.
    var total: Int?
    /// A strong validator of the body.
    var etag: String
    var storedAt: Date
    var freshUntil: Date
    var lastUsedAt: Date

    init(status: Int, body: ByteBuffer, total: Int?, storedAt: Date, lifetime: Duration) {
        self.status = status
        self.body = body
        self.total = total
        self.etag = Self.etag(of: body)
        self.storedAt = storedAt
        self.freshUntil = storedAt.addingTimeInterval(lifetime.seconds)
        self.lastUsedAt = storedAt
    }

    fileprivate init(status: Int, body: ByteBuffer, total: Int?, etag: String, storedAt: Date, freshUntil: Date, lastUsedAt: Date) {
        self.status = status
        self.body = body
        self.total = total
        self.etag = etag
        self.storedAt = storedAt
        self.freshUntil = freshUntil
        self.lastUsedAt = lastUsedAt
    }

    static func etag(of body: ByteBuffer) -> String {
        EntityTag.of(body.readableBytesView)
    }

    func isFresh(at now: Date) -> Bool { now < freshUntil }

    /// Seconds of freshness left; negative once stale (RFC 9211's `ttl`).
    func ttl(at now: Date) -> Int { Int(freshUntil.timeIntervalSince(now).rounded(.down)) }
}

/// The cache's table, `catalog.responses`: lookups by key, whole-row replacement, least-recently-
/// used eviction. Shared by every replica.
struct ResponseStore: Sendable {
    let client: PostgresClient
    let logger: Logger
    let maxEntries: Int
    let maxBytes: Int

    func lookup(_ key: String) async throws -> CachedAnswer? {
        try await Self.decode(client.query(Self.select(key), logger: logger))
    }

    func lookup(_ key: String, on connection: PostgresConnection) async throws -> CachedAnswer? {
        try await Self.decode(connection.query(Self.select(key), logger: logger))
    }

    private static func select(_ key: String) -> PostgresQuery {
        "SELECT status, body, total, etag, stored_at, fresh_until, last_used_at FROM catalog.responses WHERE key = \(key)"
    }

    private static func decode(_ rows: PostgresRowSequence) async throws -> CachedAnswer? {
        for try await (status, body, total, etag, storedAt, freshUntil, lastUsedAt) in rows.decode(
            (Int16, ByteBuffer, Int32?, String, Date, Date, Date).self
        ) {
            return CachedAnswer(
                status: Int(status),
                body: body,
                total: total.map(Int.init),
                etag: etag,
                storedAt: storedAt,
                freshUntil: freshUntil,
                lastUsedAt: lastUsedAt
            )
        }
        return nil
    }

    func store(_ key: String, _ answer: CachedAnswer, on connection: PostgresConnection) async throws {
        let total = answer.total.map { Int32(clamping: $0) }
        try await connection.query(
            """
            INSERT INTO catalog.responses (key, status, body, total, etag, stored_at, fresh_until, last_used_at, size)
            VALUES (\(key), \(Int16(answer.status)), \(answer.body), \(total), \(answer.etag), \(answer.storedAt), \(answer.freshUntil), \(answer.lastUsedAt), \(Int32(answer.body.readableBytes)))
            ON CONFLICT (key) DO UPDATE SET status = excluded.status, body = excluded.body, total = excluded.total,
                etag = excluded.etag, stored_at = excluded.stored_at, fresh_until = excluded.fresh_until,
                last_used_at = excluded.last_used_at, size = excluded.size
            """,
            logger: logger
        )
    }

    /// Marks `key` as used now (for eviction).
    func touch(_ key: String) async throws {
        try await client.query("UPDATE catalog.responses SET last_used_at = now() WHERE key = \(key)", logger: logger)
    }

    /// Removes the least recently used entries beyond `maxEntries` or `maxBytes`.
    /// - Returns: how many were removed.
    @discardableResult
    func evict() async throws -> Int {
        let rows = try await client.query(
            """
            WITH ranked AS (
                SELECT key, row_number() OVER newest AS position, sum(size) OVER newest AS bytes
                FROM catalog.responses
                WINDOW newest AS (ORDER BY last_used_at DESC, key)
            )
            DELETE FROM catalog.responses r USING ranked
            WHERE r.key = ranked.key AND (ranked.position > \(maxEntries) OR ranked.bytes > \(Int64(maxBytes)))
            RETURNING r.key
            """,
            logger: logger
        )
        var removed = 0
        for try await _ in rows { removed += 1 }
        return removed
    }

    /// Holds the cluster-wide lock for `key` until the transaction on `connection` ends, so one
    /// replica at a time fetches it; waits at most `timeout` (then throws).
    func lockKey(_ key: String, timeout: Duration, on connection: PostgresConnection) async throws {
        try await connection.query("SELECT set_config('lock_timeout', \("\(Int(timeout.milliseconds))ms"), true)", logger: logger)
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 7305))", logger: logger)
    }
}
