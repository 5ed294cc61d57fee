/// A table or view as the data API exposes it: an allow-list of columns, each an SQL expression
/// over the table's source with the Postgres type its filter values are read as. Nothing else of
/// the schema is reachable: a name that is not listed is an error, never SQL.
package struct TableDescription: Sendable {
    package enum ColumnType: String, Sendable {
        case text, uuid, timestamptz, bigint, integer, boolean, numeric, jsonb

        /// How a bound text value becomes this type (empty for text, which it already is).
        var cast: String { self == .text ? "" : "::\(rawValue)" }
    }

    package struct Column: Sendable {
        package let name: String
        /// SQL over `source`, written by the service, never by a request.
        package let expression: String
        package let type: ColumnType
        /// Whether a request body may set the column.
        package let writable: Bool

        package init(_ name: String, _ type: ColumnType, expression: String? = nil, writable: Bool = false) {
            precondition(Identifier.isValid(name), "column names are identifiers: \(name)")
            self.name = name
            self.expression = expression ?? "\"\(name)\""
            self.type = type
            self.writable = writable
        }
    }

    package let name: String
    /// The `FROM` clause: a table, or a subquery with an alias, written by the service.
    package let source: String
    package let columns: [Column]
    /// The columns that name one row, for writes' answers.
    package let primaryKey: [String]
    /// The order of a read that asks for none (PostgREST has none; a stable one is kinder).
    package let defaultOrder: [DataQuery.OrderTerm]
    private let byName: [String: Column]

    package init(name: String, source: String, columns: [Column], primaryKey: [String], defaultOrder: [DataQuery.OrderTerm] = []) {
        self.name = name
        self.source = source
        self.columns = columns
        self.primaryKey = primaryKey
        self.defaultOrder = defaultOrder
        self.byName = Dictionary(uniqueKeysWithValues: columns.map { ($0.name, $0) })
        precondition(primaryKey.allSatisfy { byName[$0] != nil }, "the primary key of \(name) names its columns")
    }

    package func column(_ name: String) -> Column? {
        byName[name]
    }

    /// The column `name`, for a filter, `select` or `order`.
    /// - Throws: 400 42703 when the table has none.
    package func queried(_ name: String) throws(DataAPIError) -> Column {
        guard let column = byName[name] else { throw .unknownColumn(name, of: self.name) }
        return column
    }
}
