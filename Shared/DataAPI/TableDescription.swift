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
        /// The name the table's writes know the column by: its own, or for an alias the column it
        /// stands for.
        package let canonical: String
        /// How a value given for the column (in a filter or a body) is written the way it is
        /// stored, such as a key with or without its bucket's prefix; `nil` keeps it as it is.
        package let normalize: (@Sendable (String) -> String)?

        package init(
            _ name: String,
            _ type: ColumnType,
            expression: String? = nil,
            writable: Bool = false,
            normalize: (@Sendable (String) -> String)? = nil
        ) {
            precondition(Identifier.isValid(name), "column names are identifiers: \(name)")
            self.name = name
            self.expression = expression ?? "\"\(name)\""
            self.type = type
            self.writable = writable
            self.canonical = name
            self.normalize = normalize
        }

        private init(alias name: String, of column: Column) {
            precondition(Identifier.isValid(name), "column names are identifiers: \(name)")
            self.name = name
            self.expression = column.expression
            self.type = column.type
            self.writable = column.writable
            self.canonical = column.canonical
            self.normalize = column.normalize
        }

        /// Another name for `column`, as an app's own table calls it: the same SQL, type and
        /// rules in filters, `select` and `order`; a body that names it writes `column`.
        package static func alias(_ name: String, of column: Column) -> Column {
            Column(alias: name, of: column)
        }

        /// `value` as the column stores it.
        package func normalized(_ value: String) -> String {
            normalize?(value) ?? value
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
