import Identity
import PostgresNIO

/// Renders typed queries over one table description as SQL. Every name in the SQL comes from the
/// description (an unknown one is 400 42703); every value is a bound parameter, sent as text and
/// cast to the column's type by Postgres (so an upper-case UUID is the same UUID, and a value that
/// is not one is Postgres's 22P02, a 400).
package struct SQLRenderer: Sendable {
    package let table: TableDescription
    /// The most rows one read answers, whatever `limit` asks (PostgREST's `db-max-rows`).
    package let maxRows: Int

    package init(table: TableDescription, maxRows: Int = 1_000) {
        self.table = table
        self.maxRows = maxRows
    }

    /// The rows `query` selects as one JSON array (text), with how many there are:
    /// `SELECT json_agg(…)::text, count(*) FROM (SELECT … LIMIT … OFFSET …)`.
    package func read(_ query: DataQuery) throws(DataAPIError) -> PostgresQuery {
        try jsonRows(query.select, counted: true, order: query.order, limit: min(query.limit ?? maxRows, maxRows), offset: query.offset) {
            (sql) throws(DataAPIError) in
            try whereClause(query.filters, into: &sql)
        }
    }

    /// How many rows the filters of `query` select, ignoring its page: `Prefer: count=exact`.
    package func count(_ query: DataQuery) throws(DataAPIError) -> PostgresQuery {
        var sql = SQLText()
        sql.append("SELECT count(*) FROM ")
        sql.append(table.source)
        try whereClause(query.filters, into: &sql)
        return sql.query
    }

    /// The primary keys of the rows the filters of `query` select (at most `limit`), as a JSON
    /// array of objects: what a PATCH or DELETE hands its domain function, row by row.
    package func keys(_ query: DataQuery, limit: Int) throws(DataAPIError) -> PostgresQuery {
        try jsonRows(table.primaryKey.map { DataQuery.SelectItem(column: $0) }, counted: false, order: nil, limit: limit) {
            (sql) throws(DataAPIError) in
            try whereClause(query.filters, into: &sql)
        }
    }

    /// The rows named by `keys` (primary-key objects), selected and ordered as `query` asks:
    /// the answer of a write with `return=representation`.
    package func read(_ query: DataQuery, keys: [[String: JSONValue]]) throws(DataAPIError) -> PostgresQuery {
        try jsonRows(query.select, counted: true, order: query.order, limit: nil) { (sql) throws(DataAPIError) in
            sql.append(" WHERE ")
            if keys.isEmpty {
                sql.append("false")
            }
            for (index, key) in keys.enumerated() {
                sql.append(index == 0 ? "(" : " OR (")
                for (position, name) in table.primaryKey.enumerated() {
                    let column = try table.queried(name)
                    if position > 0 { sql.append(" AND ") }
                    sql.append(column.expression)
                    if let value = key[name].flatMap(Self.text) {
                        sql.append(" = ")
                        sql.bind(value, cast: column.type.cast)
                    } else {
                        sql.append(" IS NULL")
                    }
                }
                sql.append(")")
            }
        }
    }

    /// `SELECT json_agg(t)::text[, count(*)] FROM (SELECT <items> FROM <source> <rows> ORDER BY …
    /// LIMIT … OFFSET …) t`, the rows chosen by what `rows` writes. `order` nil: none; empty: the
    /// table's default.
    private func jsonRows(
        _ items: [DataQuery.SelectItem]?,
        counted: Bool,
        order: [DataQuery.OrderTerm]?,
        limit: Int?,
        offset: Int? = nil,
        rows: (inout SQLText) throws(DataAPIError) -> Void
    ) throws(DataAPIError) -> PostgresQuery {
        var sql = SQLText()
        let selected = try selectList(items)
        sql.append(
            counted ? "SELECT coalesce(json_agg(t), '[]')::text, count(*) FROM (SELECT " : "SELECT coalesce(json_agg(t), '[]')::text FROM (SELECT "
        )
        sql.append(selected)
        sql.append(" FROM ")
        sql.append(table.source)
        try rows(&sql)
        if let order { try orderClause(order.isEmpty ? table.defaultOrder : order, into: &sql) }
        if let limit {
            sql.append(" LIMIT ")
            sql.bind(String(limit), cast: "::bigint")
        }
        if let offset, offset > 0 {
            sql.append(" OFFSET ")
            sql.bind(String(offset), cast: "::bigint")
        }
        sql.append(") t")
        return sql.query
    }

    /// A JSON scalar as the text Postgres reads for it.
    package static func text(_ value: JSONValue) -> String? {
        switch value {
        case .null: nil
        case .bool(let value): value ? "true" : "false"
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): value
        case .array, .object: nil
        }
    }

    private func selectList(_ items: [DataQuery.SelectItem]?) throws(DataAPIError) -> String {
        let items = items ?? table.columns.map { DataQuery.SelectItem(column: $0.name) }
        var names = Set<String>()
        var parts: [String] = []
        parts.reserveCapacity(items.count)
        for item in items {
            let column = try table.queried(item.column)
            // A repeated name would be a repeated key in each row's object.
            guard names.insert(item.name).inserted else { continue }
            parts.append("\(column.expression) AS \"\(item.name)\"")
        }
        return parts.joined(separator: ", ")
    }

    private func whereClause(_ filters: [DataQuery.Filter], into sql: inout SQLText) throws(DataAPIError) {
        for (index, filter) in filters.enumerated() {
            sql.append(index == 0 ? " WHERE " : " AND ")
            let column = try table.queried(filter.column)
            if filter.negated { sql.append("NOT (") }
            switch (filter.operator, filter.operand) {
            case (.is, .truth(let truth)):
                sql.append(column.expression)
                switch truth {
                case .null: sql.append(" IS NULL")
                case .true, .false, .unknown:
                    guard column.type == .boolean else {
                        throw .badQuery(
                            "\"failed to parse filter (is.\(truth.rawValue))\" (line 1, column 1)",
                            details: "\(filter.column) is not a boolean: is takes null only."
                        )
                    }
                    sql.append(" IS \(truth.rawValue.uppercased())")
                }
            case (.in, .list(let values)):
                sql.append(column.expression)
                sql.append(" = ANY(")
                sql.bind(values.map(column.normalized), cast: "::\(column.type.rawValue)[]")
                sql.append(")")
            case (.like, .value(let pattern)), (.ilike, .value(let pattern)):
                sql.append(column.expression)
                if column.type != .text { sql.append("::text") }
                sql.append(filter.operator == .like ? " LIKE " : " ILIKE ")
                sql.bind(pattern.replacingOccurrences(of: "*", with: "%"), cast: "")
            case (let op, .value(let value)):
                let comparison =
                    switch op {
                    case .eq: " = "
                    case .neq: " <> "
                    case .gt: " > "
                    case .gte: " >= "
                    case .lt: " < "
                    default: " <= "
                    }
                sql.append(column.expression)
                sql.append(comparison)
                sql.bind(column.normalized(value), cast: column.type.cast)
            default:
                throw .badQuery("\"failed to parse filter (\(filter.column))\" (line 1, column 1)")
            }
            if filter.negated { sql.append(")") }
        }
    }

    private func orderClause(_ terms: [DataQuery.OrderTerm], into sql: inout SQLText) throws(DataAPIError) {
        for (index, term) in terms.enumerated() {
            sql.append(index == 0 ? " ORDER BY " : ", ")
            sql.append(try table.queried(term.column).expression)
            sql.append(term.descending ? " DESC" : " ASC")
            switch term.nulls {
            case .first: sql.append(" NULLS FIRST")
            case .last: sql.append(" NULLS LAST")
            case nil: break
            }
        }
    }
}

/// SQL being written, with its bound values: `bind` appends `$n` (and a cast) and the value.
struct SQLText {
    private var text = ""
    private var bindings = PostgresBindings()
    private var count = 0

    init() {
        text.reserveCapacity(256)
    }

    mutating func append(_ sql: String) {
        text += sql
    }

    mutating func bind(_ value: String, cast: String) {
        count += 1
        bindings.append(value)
        text += "$\(count)\(cast)"
    }

    mutating func bind(_ values: [String], cast: String) {
        count += 1
        bindings.append(values)
        text += "$\(count)\(cast)"
    }

    var query: PostgresQuery {
        PostgresQuery(unsafeSQL: text, binds: bindings)
    }
}
