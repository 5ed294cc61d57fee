import Foundation
import Logging
import PostgresNIO

/// Looks for anything left of a deleted user: every column of every table in the services'
/// schemas that can hold an id (a `uuid`, text, JSON or an array of them) is searched for the
/// user's id, in any letter case, and every file under the blob folders whose key names it.
///
/// It passes over only the bookkeeping that holds no personal data and expires by itself: the
/// event bus's `outbox` and `inbox` (the deletion's own events and acknowledgements among them)
/// and the migration ledgers.
package struct ErasureCheck: Sendable {
    /// Something of the user still stored.
    package struct Finding: Sendable, Equatable, CustomStringConvertible {
        /// `schema.table.column`, or `blob <folder>/<key>`.
        package var place: String
        /// Rows holding the id (1 for a blob).
        package var count: Int

        package var description: String { count == 1 ? place : "\(place): \(count) rows" }
    }

    /// Tables that are bookkeeping, in every schema.
    package static let passedOver: Set<String> = ["outbox", "inbox", "schema_migrations"]

    /// The services' schemas (those `ServiceCatalog` provisions).
    package var schemas: [String]
    /// Roots of the file blob stores.
    package var blobFolders: [URL]

    package init(schemas: [String] = ServiceCatalog.all.compactMap(\.schema), blobFolders: [URL] = []) {
        self.schemas = schemas
        self.blobFolders = blobFolders
    }

    /// Every place `user` is still found, on a connection that may read every schema (the
    /// superuser's: row-level security is not in its way).
    package func findings(of user: UUID, on connection: PostgresConnection, logger: Logger) async throws -> [Finding] {
        try await rows(of: user, on: connection, logger: logger) + blobs(of: user)
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

    private func blobs(of user: UUID) -> [Finding] {
        let id = user.uuidString.lowercased()
        var findings: [Finding] = []
        for folder in blobFolders {
            let root = folder.standardizedFileURL.path + "/"
            guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else { continue }
            for case let file as URL in walker where (try? file.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
                let key = String(file.standardizedFileURL.path.dropFirst(root.count))
                if key.lowercased().contains(id) { findings.append(Finding(place: "blob \(folder.path)/\(key)", count: 1)) }
            }
        }
        return findings.sorted { $0.place < $1.place }
    }

    /// `name` as a quoted SQL identifier (the names come from the catalogue, quoted all the same).
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
