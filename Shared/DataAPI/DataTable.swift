import Database
import Foundation
import Identity
import Logging
import PostgresNIO

/// Who a data API request runs as: a user whose token verified, or the anonymous caller (no
/// bearer token, or the client's anon key sent as one).
package struct DataCaller: Sendable {
    package let claims: AccessTokenClaims?

    package init(claims: AccessTokenClaims?) {
        self.claims = claims
    }

    package static let anonymous = DataCaller(claims: nil)

    package var userID: UUID? { claims?.userID }
}

/// Runs a read's statements in one transaction set up for `caller` (the service's row-level
/// security settings) and gives back each statement's rows.
package typealias DataReader = @Sendable (_ caller: DataCaller, _ statements: [PostgresQuery]) async throws -> [[PostgresRow]]

/// What an insert asks beyond its rows.
package struct InsertRequest: Sendable {
    package let caller: DataCaller
    /// `on_conflict` (or the primary key, for `resolution=…` without it): what makes a row a
    /// duplicate; `nil` for a plain insert, where a duplicate is 409 23505.
    package let onConflict: [String]?
    package let resolution: RequestPreferences.Resolution?
}

/// The writes a table allows, each through the service's domain code (its checks, its events).
/// A write throws the service's own errors (its problems), which the endpoint answers in
/// PostgREST's shape, or a `DataAPIError`.
package struct DataWrites: Sendable {
    /// Writes the rows (bodies with only writable, known columns) and gives back the primary keys
    /// of those written or, with `merge-duplicates`, met: the rows `return=representation` shows.
    package var insert: (@Sendable (_ rows: [[String: JSONValue]], _ request: InsertRequest) async throws -> [[String: JSONValue]])?
    /// Changes the row `key` (which the caller can see); false when it is gone or not theirs.
    package var update: (@Sendable (_ key: [String: JSONValue], _ changes: [String: JSONValue], _ caller: DataCaller) async throws -> Bool)?
    /// Deletes the row `key` (which the caller can see); false when it is gone or not theirs.
    package var delete: (@Sendable (_ key: [String: JSONValue], _ caller: DataCaller) async throws -> Bool)?

    package init(
        insert: (@Sendable ([[String: JSONValue]], InsertRequest) async throws -> [[String: JSONValue]])? = nil,
        update: (@Sendable ([String: JSONValue], [String: JSONValue], DataCaller) async throws -> Bool)? = nil,
        delete: (@Sendable ([String: JSONValue], DataCaller) async throws -> Bool)? = nil
    ) {
        self.insert = insert
        self.update = update
        self.delete = delete
    }
}

/// One table or view a service exposes under `/rest/v1/{name}`.
package struct DataTable: Sendable {
    package let renderer: SQLRenderer
    package let read: DataReader
    package let writes: DataWrites

    package init(_ description: TableDescription, read: @escaping DataReader, writes: DataWrites = DataWrites(), maxRows: Int = 1_000) {
        self.renderer = SQLRenderer(table: description, maxRows: maxRows)
        self.read = read
        self.writes = writes
    }

    package var description: TableDescription { renderer.table }
}

/// A function under `/rest/v1/rpc/{name}`: its JSON arguments in, a JSON value out.
package struct DataFunction: Sendable {
    package let name: String
    package let call: @Sendable (_ arguments: [String: JSONValue], _ caller: DataCaller) async throws -> JSONValue

    package init(name: String, call: @escaping @Sendable ([String: JSONValue], DataCaller) async throws -> JSONValue) {
        self.name = name
        self.call = call
    }
}

extension PostgresClient {
    /// A `DataReader` over this client: each read runs with `settings(caller)` set locally (the
    /// service's row-level security settings) and the time zone UTC, so timestamps read as
    /// PostgREST's do (`2026-11-25T10:00:00.123456+00:00`). A read of one statement is one round
    /// trip (`withSettings`); several (rows and their count) share a transaction.
    package func dataReader(logger: Logger, settings: @escaping @Sendable (DataCaller) -> [(name: String, value: String)]) -> DataReader {
        { caller, statements in
            var local = settings(caller)
            local.append((name: "TimeZone", value: "UTC"))
            if statements.count == 1 {
                return [try await self.query(Self.withSettings(local, statements[0]), logger: logger).collect()]
            }
            return try await self.withTransaction(settings: local, logger: logger) { connection in
                var results: [[PostgresRow]] = []
                for statement in statements {
                    results.append(try await connection.query(statement, logger: logger).collect())
                }
                return results
            }
        }
    }

    /// `statement` as one statement that first sets each of `settings` transaction-locally (its
    /// own transaction's): the settings in a first step, the statement in a lateral step that
    /// depends on it, so every row-level security policy is checked after they are set (were it
    /// ever checked before, it would see no user and show nothing: it fails closed).
    static func withSettings(_ settings: [(name: String, value: String)], _ statement: PostgresQuery) -> PostgresQuery {
        var binds = statement.binds
        let calls = binds.settingLocally(settings)
        let sql =
            "SELECT step.* FROM (SELECT \(calls.joined(separator: " || ")) AS set) AS settings "
            + "CROSS JOIN LATERAL (SELECT * FROM (\(statement.sql)) AS rows WHERE settings.set IS NOT NULL) AS step"
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }
}
