import Contracts
import Foundation
import Identity
import ServiceKit

/// Reading and writing the JSON of Supabase Realtime's messages: the fields of a client's
/// payload, and the cells of a row made from an event.
extension JSONValue {
    subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { fields[key] } else { nil }
    }

    var arrayValue: [JSONValue]? {
        if case .array(let items) = self { items } else { nil }
    }

    var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }
}

extension JSONValue {
    static func uuid(_ id: UUID) -> JSONValue { .string(id.lowercased) }
    static func time(_ date: Date) -> JSONValue { .string(EventJSON.formatTimestamp(date)) }
    static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
}

extension JSONValue: ExpressibleByStringLiteral {
    package init(stringLiteral value: String) { self = .string(value) }
}
