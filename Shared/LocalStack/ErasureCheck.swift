import Blobs
import Foundation
import Logging
import PostgresNIO

/// Looks for anything left of a deleted user: every column of every table in the services'
/// schemas that can hold an id (a `uuid`, text, JSON or an array of them) is searched for the
/// user's id, in any letter case, and every blob whose key names it, in each blob store (a folder,
/// an S3 bucket).
///
/// It passes over only the bookkeeping that holds no personal data and expires by itself: the
/// event bus's `outbox` and `inbox` (the deletion's own events and acknowledgements among them)
/// and the migration ledgers.
package struct ErasureCheck: Sendable {
    /// Something of the user still stored.
    package struct Finding: Sendable, Equatable, CustomStringConvertible {
        /// `schema.table.column`, or `blob <store>/<key>`.
        package var place: String
        /// Rows holding the id (1 for a blob).
        package var count: Int

        package var description: String { count == 1 ? place : "\(place): \(count) rows" }
    }

    /// Tables that are bookkeeping, in every schema (besides the migration ledgers, `…migrations`).
    package static let passedOver: Set<String> = ["outbox", "inbox"]

    /// The services' schemas (those `ServiceCatalog` provisions).
    package var schemas: [String]
    /// The blob stores, each with the name a finding gives it (its folder, its bucket).
    package var blobStores: [(name: String, store: any BlobStore)]

    package init(schemas: [String] = ServiceCatalog.all.compactMap(\.schema), blobStores: [(name: String, store: any BlobStore)] = []) {
        self.schemas = schemas
        self.blobStores = blobStores
    }

    /// The check of file blob stores rooted at `blobFolders`.
    package init(schemas: [String] = ServiceCatalog.all.compactMap(\.schema), blobFolders: [URL]) throws {
        self.init(schemas: schemas, blobStores: try blobFolders.map { ($0.path, try FileBlobStore(root: $0)) })
    }

    /// Every place `user` is still found, on a connection that may read every schema (the
    /// superuser's: row-level security is not in its way).
    package func findings(of user: UUID, on connection: PostgresConnection, logger: Logger) async throws -> [Finding] {
        try await rows(of: user, on: connection, logger: logger) + (try await blobs(of: user))
    }

    private func rows(of user: UUID, on connection: PostgresConnection, logger: Logger) async throws -> [Finding] {
        let columns = try await connection.query(
            """
            SELECT c.table_schema, c.table_name, c.column_name, c.data_type = 'uuid'
            FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
            WHERE c.table_schema = ANY(\(schemas)) AND NOT c.table_name = ANY(\(Array(Self.passedOver)))
              AND c.table_name NOT LIKE '%migrations'
              AND (c.data_type IN ('uuid', 'text', 'character varying', 'jsonb', 'json') OR c.data_type = 'ARRAY')
            ORDER BY 1, 2, c.ordinal_position
            """,
            logger: logger
        ).collect().map { try $0.decode((String, String, String, Bool).self) }
        let id = user.uuidString.lowercased()
        var findings: [Finding] = []
        for (table, tableColumns) in Dictionary(grouping: columns, by: { "\(Self.quoted($0.0)).\(Self.quoted($0.1))" }).sorted(by: { $0.key < $1.key }
        ) {
            let counts = tableColumns.map { column in
                let name = Self.quoted(column.2)
                let test = column.3 ? "\(name) = '\(id)'::uuid" : "\(name)::text ILIKE '%\(id)%'"
                return "count(*) FILTER (WHERE \(test))"
            }
            let row = try await connection.query(PostgresQuery(unsafeSQL: "SELECT \(counts.joined(separator: ", ")) FROM \(table)"), logger: logger)
                .collect()[0]
            for (index, cell) in row.makeRandomAccess().enumerated() {
                let count = try cell.decode(Int.self)
                guard count > 0 else { continue }
                let column = tableColumns[index]
                findings.append(Finding(place: "\(column.0).\(column.1).\(column.2)", count: count))
            }
        }
        return findings
    }

    private func blobs(of user: UUID) async throws -> [Finding] {
        let id = user.uuidString.lowercased()
        var findings: [Finding] = []
        for (name, store) in blobStores {
            for blob in try await store.list(prefix: "") where blob.key.lowercased().contains(id) {
                findings.append(Finding(place: "blob \(name)/\(blob.key)", count: 1))
            }
        }
        return findings.sorted { $0.place < $1.place }
    }

    /// `name` as a quoted SQL identifier (the names come from the catalogue, quoted all the same).
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
