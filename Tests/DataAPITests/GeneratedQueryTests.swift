import DataAPI
import ServiceKit
import Testing

/// Property tests over generated queries (a seeded generator, so a failure names its seed): any
/// query a client can build survives being written as a query string and parsed back, and SQL
/// rendered from it holds no value of the query, only placeholders.
@Suite("Generated queries") struct GeneratedQueryTests {
    static let table = TableDescription(
        name: "things",
        source: "things",
        columns: [
            .init("id", .uuid), .init("name", .text, writable: true), .init("count", .bigint), .init("done", .boolean),
            .init("created_at", .timestamptz),
        ],
        primaryKey: ["id"]
    )

    @Test func queriesRoundTripThroughTheirQueryStrings() throws {
        var random = SeededRandom(state: 25)
        for round in 0..<3_000 {
            let query = Self.query(&random)
            let parsed = try DataQuery(query: query.queryString)
            #expect(parsed == query, "round \(round): \(query.queryString)")
        }
    }

    @Test func renderedSQLBindsEveryValue() throws {
        var random = SeededRandom(state: 7)
        let renderer = SQLRenderer(table: Self.table, maxRows: 1_000)
        for _ in 0..<1_000 {
            var query = Self.query(&random)
            query.filters = query.filters.filter { !($0.operator == .is && $0.operand != .truth(.null) && $0.column != "done") }
            let sql = try renderer.read(query).sql
            for filter in query.filters {
                if case .value(let value) = filter.operand, value.count > 3 {
                    #expect(!sql.contains(value), "\(value) in \(sql)")
                }
            }
            #expect(!sql.contains(";"))
        }
    }

    /// A long random run of arbitrary text, and of queries with one character changed, through the
    /// parser and the renderer: each ends in a query or a `DataAPIError`, never a crash.
    @Test func arbitraryTextNeverCrashesTheParserOrTheRenderer() {
        var random = SeededRandom(state: 2025)
        let renderer = SQLRenderer(table: Self.table)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz_ID0123456789.,:()\"\\*%+&=!;'-/ é🙂\u{0}".unicodeScalars)
        var parsed = 0
        for round in 0..<40_000 {
            var text: String
            if round % 2 == 0 {
                text = String(String.UnicodeScalarView((0..<random.next(upTo: 80)).map { _ in alphabet[random.next(upTo: alphabet.count)] }))
            } else {
                var scalars = Array(Self.query(&random).queryString.unicodeScalars)
                if !scalars.isEmpty { scalars[random.next(upTo: scalars.count)] = alphabet[random.next(upTo: alphabet.count)] }
                text = String(String.UnicodeScalarView(scalars))
            }
            if let query = try? DataQuery(query: text) {
                parsed += 1
                _ = try? renderer.read(query)
                _ = try? renderer.count(query)
                _ = try? renderer.keys(query, limit: 10)
            }
        }
        #expect(parsed > 1_000)
    }

    // MARK: Generation

    static let columns = ["id", "name", "count", "done", "created_at"]

    static func query(_ random: inout SeededRandom) -> DataQuery {
        var query = DataQuery()
        if random.next(upTo: 3) > 0 {
            query.select = (0..<(1 + random.next(upTo: 4))).map { _ in
                DataQuery.SelectItem(alias: random.next(upTo: 3) == 0 ? "alias_\(random.next(upTo: 100))" : nil, column: pick(columns, &random))
            }
        }
        query.filters = (0..<random.next(upTo: 5)).map { _ in filter(&random) }
        query.order = (0..<random.next(upTo: 3)).map { _ in
            DataQuery.OrderTerm(
                column: pick(columns, &random),
                descending: random.next(upTo: 2) == 0,
                nulls: [nil, .first, .last][random.next(upTo: 3)]
            )
        }
        if random.next(upTo: 2) == 0 { query.limit = random.next(upTo: 2_000) }
        if random.next(upTo: 3) == 0 { query.offset = random.next(upTo: 10_000) }
        if random.next(upTo: 5) == 0 { query.onConflict = Array(columns.prefix(1 + random.next(upTo: 2))) }
        return query
    }

    static func filter(_ random: inout SeededRandom) -> DataQuery.Filter {
        let op = pick(DataQuery.Operator.allCases, &random)
        let operand: DataQuery.Operand =
            switch op {
            case .is: .truth(pick(DataQuery.Truth.allCases, &random))
            case .in: .list((0..<random.next(upTo: 6)).map { _ in value(&random) })
            default: .value(value(&random))
            }
        return DataQuery.Filter(column: pick(columns, &random), negated: random.next(upTo: 4) == 0, op, operand)
    }

    /// Values with everything a value may hold: dots, commas, quotes, parentheses, plus signs,
    /// spaces, percent signs, SQL, non-ASCII text.
    static func value(_ random: inout SeededRandom) -> String {
        let pieces = [
            "abc", "6F9619FF-8B86-D011-B42D-00C04FC964FF", "1;drop table x", "a,b", "(x)", "\"q\"", "back\\slash", "+1", "50%",
            "é🙂", " lead", "trail ", "*wild*", "1.5", "unsplash:abc", "", "null", "eq.1",
        ]
        return (0..<(1 + random.next(upTo: 3))).map { _ in pick(pieces, &random) }.joined()
    }

    static func pick<T>(_ items: [T], _ random: inout SeededRandom) -> T {
        items[random.next(upTo: items.count)]
    }
}

extension SeededRandom {
    /// A whole number in 0..<bound (0 when bound is 0).
    mutating func next(upTo bound: Int) -> Int {
        bound == 0 ? 0 : Int.random(in: 0..<bound, using: &self)
    }
}
