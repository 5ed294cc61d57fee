/// A PostgREST request's query string as a typed query: what to select, the filters, the order,
/// the page and the conflict target of an upsert. Parsing knows the grammar only; whether the
/// columns exist is the table description's business (`SQLRenderer`).
package struct DataQuery: Sendable, Hashable {
    package enum Operator: String, Sendable, Hashable, CaseIterable {
        case eq, neq, gt, gte, lt, lte, like, ilike, `in`, `is`
    }

    /// The operand of `is`.
    package enum Truth: String, Sendable, Hashable, CaseIterable {
        case null, `true`, `false`, unknown
    }

    package enum Operand: Sendable, Hashable {
        case value(String)
        case list([String])
        case truth(Truth)
    }

    /// `column=[not.]operator.operand`.
    package struct Filter: Sendable, Hashable {
        package var column: String
        package var negated: Bool
        package var `operator`: Operator
        package var operand: Operand

        package init(column: String, negated: Bool = false, _ op: Operator, _ operand: Operand) {
            self.column = column
            self.negated = negated
            self.operator = op
            self.operand = operand
        }
    }

    /// `alias:column`, or `column` named as itself.
    package struct SelectItem: Sendable, Hashable {
        package var alias: String?
        package var column: String

        package init(alias: String? = nil, column: String) {
            self.alias = alias
            self.column = column
        }

        /// The key of the column in the answer.
        package var name: String { alias ?? column }
    }

    package enum Nulls: String, Sendable, Hashable {
        case first = "nullsfirst"
        case last = "nullslast"
    }

    package struct OrderTerm: Sendable, Hashable {
        package var column: String
        package var descending: Bool
        package var nulls: Nulls?

        package init(column: String, descending: Bool = false, nulls: Nulls? = nil) {
            self.column = column
            self.descending = descending
            self.nulls = nulls
        }
    }

    /// `nil` for `*` (or no `select`): every column.
    package var select: [SelectItem]?
    package var filters: [Filter] = []
    package var order: [OrderTerm] = []
    package var limit: Int?
    package var offset: Int?
    /// `on_conflict=a,b`: the columns whose uniqueness an upsert resolves.
    package var onConflict: [String]?
    /// `columns=a,b`: the body columns an insert takes (the others are ignored).
    package var columns: [String]?

    package init(
        select: [SelectItem]? = nil,
        filters: [Filter] = [],
        order: [OrderTerm] = [],
        limit: Int? = nil,
        offset: Int? = nil,
        onConflict: [String]? = nil,
        columns: [String]? = nil
    ) {
        self.select = select
        self.filters = filters
        self.order = order
        self.limit = limit
        self.offset = offset
        self.onConflict = onConflict
        self.columns = columns
    }
}

// MARK: - Parsing

extension DataQuery {
    /// The most values an `in.(…)` list may hold.
    package static let maxListValues = 10_000

    /// Parses a raw (still percent-encoded) query string as PostgREST reads it.
    /// - Throws: PGRST100 for what does not parse.
    package init(query: String) throws(DataAPIError) {
        try self.init(pairs: FormDecoding.pairs(query))
    }

    /// Parses decoded `name=value` pairs, in their order.
    package init(pairs: [(name: String, value: String)]) throws(DataAPIError) {
        for (name, value) in pairs {
            switch name {
            case "select": select = try Self.parseSelect(value)
            case "order": order = try Self.parseOrder(value)
            case "limit": limit = try Self.parseCount(value, name: "limit")
            case "offset": offset = try Self.parseCount(value, name: "offset")
            case "on_conflict": onConflict = try Self.parseColumns(value, name: "on_conflict")
            case "columns": columns = try Self.parseColumns(value, name: "columns")
            case "or", "and", "not.or", "not.and":
                throw .badQuery(
                    "Logical operators (\(name)=) are not supported",
                    details: "Combine filters with separate parameters (they are ANDed)."
                )
            case "":
                throw .badQuery("\"failed to parse filter (\(value))\" (line 1, column 1)")
            default:
                guard !name.contains("->"), !name.contains("(") else {
                    throw .badQuery(
                        "\"failed to parse filter (\(name))\" (line 1, column 1)",
                        details: "JSON paths and embedded filters are not supported."
                    )
                }
                filters.append(try Self.parseFilter(column: name, value))
            }
        }
    }

    private static func parseCount(_ text: String, name: String) throws(DataAPIError) -> Int {
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let value = Int(text)
        else {
            throw .badQuery(
                "\"failed to parse \(name) parameter (\(text))\" (line 1, column 1)",
                details: "\(name) must be a whole number, 0 or more."
            )
        }
        return value
    }

    private static func parseColumns(_ text: String, name: String) throws(DataAPIError) -> [String] {
        // A name may come quoted ("user_id", as postgrest-py sends `columns`).
        let columns = text.split(separator: ",", omittingEmptySubsequences: false).map { raw -> String in
            let name = raw.trimmingSpaces
            return name.count >= 2 && name.first == "\"" && name.last == "\"" ? String(name.dropFirst().dropLast()) : String(name)
        }
        guard !columns.isEmpty, columns.allSatisfy(Identifier.isValid) else {
            throw .badQuery("\"failed to parse \(name) parameter (\(text))\" (line 1, column 1)")
        }
        return columns
    }

    private static func parseSelect(_ text: String) throws(DataAPIError) -> [SelectItem]? {
        var items: [SelectItem] = []
        var everything = false
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = raw.trimmingSpaces
            if item == "*" {
                everything = true
                continue
            }
            if item.contains("(") || item.contains(")") {
                throw .badQuery("Resource embedding is not supported", details: "Select columns of this table only: \(text)")
            }
            if item.contains("->") || item.contains("::") {
                throw .badQuery(
                    "\"failed to parse select parameter (\(text))\" (line 1, column 1)",
                    details: "JSON paths and casts are not supported."
                )
            }
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            switch parts.count {
            case 1 where Identifier.isValid(item):
                items.append(SelectItem(column: String(item)))
            case 2 where Identifier.isValid(parts[0].trimmingSpaces) && Identifier.isValid(parts[1].trimmingSpaces):
                items.append(SelectItem(alias: String(parts[0].trimmingSpaces), column: String(parts[1].trimmingSpaces)))
            default:
                throw .badQuery("\"failed to parse select parameter (\(text))\" (line 1, column 1)")
            }
        }
        return everything ? nil : items
    }

    private static func parseOrder(_ text: String) throws(DataAPIError) -> [OrderTerm] {
        try text.split(separator: ",", omittingEmptySubsequences: false).map { (raw) throws(DataAPIError) -> OrderTerm in
            let parts = raw.trimmingSpaces.split(separator: ".", omittingEmptySubsequences: false)
            guard let column = parts.first, Identifier.isValid(column), parts.count <= 3 else {
                throw .badQuery("\"failed to parse order (\(text))\" (line 1, column 1)")
            }
            var term = OrderTerm(column: String(column))
            var sawDirection = false
            for modifier in parts.dropFirst() {
                switch modifier {
                case "asc" where !sawDirection && term.nulls == nil: sawDirection = true
                case "desc" where !sawDirection && term.nulls == nil:
                    sawDirection = true
                    term.descending = true
                case "nullsfirst" where term.nulls == nil: term.nulls = .first
                case "nullslast" where term.nulls == nil: term.nulls = .last
                default: throw .badQuery("\"failed to parse order (\(text))\" (line 1, column 1)")
                }
            }
            return term
        }
    }

    private static func parseFilter(column: String, _ text: String) throws(DataAPIError) -> Filter {
        var rest = Substring(text)
        var negated = false
        if rest.hasPrefix("not.") {
            negated = true
            rest = rest.dropFirst(4)
        }
        guard let dot = rest.firstIndex(of: "."), let op = Operator(rawValue: String(rest[..<dot])) else {
            throw .badQuery(
                "\"failed to parse filter (\(text))\" (line 1, column 1)",
                details: "Operators: eq, neq, gt, gte, lt, lte, like, ilike, in, is, each may follow not."
            )
        }
        let operand = rest[rest.index(after: dot)...]
        switch op {
        case .is:
            guard let truth = Truth(rawValue: operand.lowercased()) else {
                throw .badQuery("\"failed to parse filter (\(text))\" (line 1, column 1)", details: "is takes null, true, false or unknown.")
            }
            return Filter(column: column, negated: negated, .is, .truth(truth))
        case .in:
            return Filter(column: column, negated: negated, .in, .list(try parseList(operand, filter: text)))
        default:
            return Filter(column: column, negated: negated, op, .value(String(operand)))
        }
    }

    /// `(a,b,"c,d")`: values separated by commas; a value in double quotes may hold `,()` and, after
    /// a backslash, `"` or `\`. `()` is the empty list.
    private static func parseList(_ text: Substring, filter: String) throws(DataAPIError) -> [String] {
        let failure = DataAPIError.badQuery("\"failed to parse filter (\(filter))\" (line 1, column 1)", details: "in takes a list: in.(a,b,\"c,d\")")
        let scalars = Array(text.unicodeScalars)
        guard scalars.count >= 2, scalars.first == "(", scalars.last == ")" else { throw failure }
        var values: [String] = []
        var index = 1
        let end = scalars.count - 1
        if index == end { return [] }
        while true {
            var value = String.UnicodeScalarView()
            if scalars[index] == "\"" {
                index += 1
                while true {
                    guard index < end else { throw failure }
                    let scalar = scalars[index]
                    if scalar == "\"" {
                        index += 1
                        break
                    }
                    if scalar == "\\" {
                        guard index + 1 < end else { throw failure }
                        index += 1
                    }
                    value.append(scalars[index])
                    index += 1
                }
            } else {
                while index < end, scalars[index] != "," {
                    guard scalars[index] != "(", scalars[index] != ")", scalars[index] != "\"" else { throw failure }
                    value.append(scalars[index])
                    index += 1
                }
            }
            values.append(String(value))
            guard values.count <= maxListValues else {
                throw .badQuery("An in list may hold at most \(maxListValues) values")
            }
            if index == end { return values }
            guard scalars[index] == "," else { throw failure }
            index += 1
            guard index < end else { throw failure }
        }
    }
}

// MARK: - Writing back

extension DataQuery {
    /// The query as `name=value` pairs (undecoded), in a canonical order: what a client would send.
    package var pairs: [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        if let select {
            pairs.append(("select", select.map { item in item.alias.map { "\($0):\(item.column)" } ?? item.column }.joined(separator: ",")))
        }
        for filter in filters {
            let operand =
                switch filter.operand {
                case .value(let value): value
                case .truth(let truth): truth.rawValue
                case .list(let values): "(" + values.map(Self.listValue).joined(separator: ",") + ")"
                }
            pairs.append((filter.column, (filter.negated ? "not." : "") + filter.operator.rawValue + "." + operand))
        }
        if !order.isEmpty {
            pairs.append(
                (
                    "order",
                    order.map { term in
                        [term.column, term.descending ? "desc" : "asc", term.nulls?.rawValue].compactMap { $0 }.joined(separator: ".")
                    }.joined(separator: ",")
                )
            )
        }
        if let limit { pairs.append(("limit", String(limit))) }
        if let offset { pairs.append(("offset", String(offset))) }
        if let onConflict { pairs.append(("on_conflict", onConflict.joined(separator: ","))) }
        if let columns { pairs.append(("columns", columns.joined(separator: ","))) }
        return pairs
    }

    /// The query string, percent-encoded as supabase clients encode it.
    package var queryString: String {
        pairs.map { FormDecoding.encode($0.name) + "=" + FormDecoding.encode($0.value) }.joined(separator: "&")
    }

    private static func listValue(_ value: String) -> String {
        guard
            value.isEmpty || value.unicodeScalars.contains(where: { ",()\"\\".unicodeScalars.contains($0) }) || value.first == " "
                || value.last == " "
        else {
            return value
        }
        return "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// Column names and aliases: letters, digits and `_`, not starting with a digit, at most 63 bytes
/// (Postgres's limit). Only such names ever reach SQL, and always quoted.
package enum Identifier {
    package static func isValid<S: StringProtocol>(_ name: S) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 63, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else { return false }
        return bytes.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: SubSequence {
        var text = self[...]
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
