import Foundation
import Identity
import ServiceKit

/// A `postgres_changes` binding's `filter`, `column=operator.value`, matched in memory against the
/// row a change carries. Operators: `eq neq lt lte gt gte` and `in.(a,b,"c,d")`. Values compare
/// as numbers when both sides are numbers, as UUIDs (ignoring case: Swift sends them upper-case)
/// when both are UUIDs, else as text. A row without the column does not match.
struct ChangeFilter: Sendable, Equatable {
    enum Operator: String, Sendable, CaseIterable {
        case eq, neq, lt, lte, gt, gte, `in`
    }

    let column: String
    let op: Operator
    let values: [String]

    struct Invalid: Error, Equatable {
        let reason: String
    }

    init(_ text: String) throws(Invalid) {
        guard let equals = text.firstIndex(of: "=") else { throw Invalid(reason: "a filter is column=operator.value, got \(text.prefix(100))") }
        column = String(text[..<equals])
        let rest = text[text.index(after: equals)...]
        guard let dot = rest.firstIndex(of: "."), let op = Operator(rawValue: String(rest[..<dot])) else {
            throw Invalid(reason: "unknown filter operator in \(text.prefix(100)); use eq, neq, lt, lte, gt, gte or in")
        }
        self.op = op
        let value = String(rest[rest.index(after: dot)...])
        if op == .in {
            guard value.hasPrefix("("), value.hasSuffix(")") else { throw Invalid(reason: "in takes a list: \(column)=in.(a,b)") }
            values = Self.list(String(value.dropFirst().dropLast()))
        } else {
            values = [value]
        }
        guard !column.isEmpty, column.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw Invalid(reason: "\(column.prefix(60)) is not a column name")
        }
    }

    func matches(_ row: [String: JSONValue]) -> Bool {
        guard let cell = row[column], let text = Self.text(cell) else { return false }
        switch op {
        case .eq: return Self.compare(text, values[0]) == .orderedSame
        case .neq: return Self.compare(text, values[0]) != .orderedSame
        case .lt: return Self.compare(text, values[0]) == .orderedAscending
        case .lte: return Self.compare(text, values[0]) != .orderedDescending
        case .gt: return Self.compare(text, values[0]) == .orderedDescending
        case .gte: return Self.compare(text, values[0]) != .orderedAscending
        case .in: return values.contains { Self.compare(text, $0) == .orderedSame }
        }
    }

    /// The value an `eq` filter pins `column` to, as routing keys are written.
    var pinnedValue: String? { op == .eq ? Self.normalised(values[0]) : nil }

    static func normalised(_ text: String) -> String {
        UUID(uuidString: text).map { $0.lowercased } ?? text
    }

    /// A cell as text, as filters compare it; nil for null, arrays and objects.
    static func text(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .int(let number): String(number)
        case .double(let number): String(number)
        case .bool(let flag): String(flag)
        case .null, .array, .object: nil
        }
    }

    private static func compare(_ left: String, _ right: String) -> ComparisonResult {
        if let a = Double(left), let b = Double(right) { return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame }
        // UUIDs in any case: Swift sends them upper-case.
        let a = left.count == 36 ? normalised(left) : left
        let b = right.count == 36 ? normalised(right) : right
        return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
    }

    /// `a,b,"c,d"`: the items of an `in` list, quotes removed.
    private static func list(_ text: String) -> [String] {
        var items: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            switch character {
            case "\"": quoted.toggle()
            case "," where !quoted:
                items.append(current)
                current = ""
            default: current.append(character)
            }
        }
        items.append(current)
        return items
    }
}
