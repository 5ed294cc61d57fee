import Foundation
import Identity
import ServiceKit

/// A request's JSON object body, read field by field so that each bad field is a 422 naming it
/// (and a body that is no JSON object a 400).
package struct JSONObject {
    package let fields: [String: JSONValue]
    package private(set) var errors: [FieldError] = []
    /// Where this object is in the body, as a JSON Pointer (empty for the body itself).
    private let pointer: String

    package init(_ body: [UInt8]) throws {
        guard case .object(let object)? = try Self.parse(body) else { throw Self.notAnObject }
        fields = object
        pointer = ""
    }

    /// 400 `malformed-body`: the body is not a JSON object.
    static let notAnObject = Problem(
        status: .badRequest,
        type: "malformed-body",
        title: "Malformed request body",
        detail: "the body is not a JSON object"
    )

    /// `bytes` decoded as `Body` (a `JSONObjectBody`, read through a `JSONObject`).
    /// - Throws: 400 `malformed-body` for bytes that are not a JSON object or hold U+0000; what
    ///   `Body` throws of its fields.
    package static func decode<Body: Decodable>(_ type: Body.Type, from bytes: [UInt8]) throws -> Body {
        try refuseNUL(bytes)
        do {
            return try JSONDecoder().decode(Body.self, from: Data(bytes))
        } catch is DecodingError {
            throw notAnObject
        }
    }

    /// A request body as JSON, `nil` when it is not JSON.
    /// - Throws: what `refuseNUL` throws.
    package static func parse(_ body: [UInt8]) throws -> JSONValue? {
        try refuseNUL(body)
        return try? JSONDecoder().decode(JSONValue.self, from: Data(body))
    }

    /// - Throws: a 400 `malformed-body` when text in the JSON `body` holds U+0000, which Postgres
    ///   cannot store.
    package static func refuseNUL(_ body: [UInt8]) throws {
        guard !JSONText.containsNUL(body) else {
            throw Problem(
                status: .badRequest,
                type: "malformed-body",
                title: "Malformed request body",
                detail: "text in the body may not hold the NUL character (\\u0000)"
            )
        }
    }

    /// An object inside a body, at `pointer` (`/items/0`): its errors name their full place.
    package init(fields: [String: JSONValue], at pointer: String) {
        self.fields = fields
        self.pointer = pointer
    }

    /// The object field `name`, to be read field by field; give it back to `absorb` after.
    package mutating func object(_ name: String, required: Bool) -> JSONObject? {
        guard let value = fields[name], value != .null else {
            if required { fail(name, "\(name) is required") }
            return nil
        }
        guard case .object(let object) = value else {
            fail(name, "\(name) must be an object")
            return nil
        }
        return JSONObject(fields: object, at: "\(pointer)/\(name)")
    }

    /// Takes on the errors of an object read from inside this one.
    package mutating func absorb(_ inner: JSONObject) {
        errors += inner.errors
    }

    package mutating func uuid(_ name: String, required: Bool) -> UUID? {
        guard let text = self.text(name, required: required, maxCharacters: 36) else { return nil }
        guard let id = UUID(uuidString: text) else {
            fail(name, "\(name) must be a UUID")
            return nil
        }
        return id
    }

    /// A text field of at most `maxCharacters` characters — grapheme clusters, as people count
    /// them (an emoji with a skin tone is one).
    package mutating func text(_ name: String, required: Bool, maxCharacters: Int, allowEmpty: Bool = true) -> String? {
        guard let value = fields[name], value != .null else {
            if required { errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) is required")) }
            return nil
        }
        guard case .string(let text) = value else {
            errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) must be a string"))
            return nil
        }
        if !allowEmpty, text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) must not be empty"))
            return nil
        }
        guard text.count <= maxCharacters else {
            errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) is \(text.count) characters long; at most \(maxCharacters)"))
            return nil
        }
        return text
    }

    package mutating func bool(_ name: String, required: Bool) -> Bool? {
        guard let value = fields[name], value != .null else {
            if required { errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) is required")) }
            return nil
        }
        guard case .bool(let flag) = value else {
            errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) must be true or false"))
            return nil
        }
        return flag
    }

    /// A whole number in `range`.
    package mutating func integer(_ name: String, required: Bool, in range: ClosedRange<Int>) -> Int? {
        guard let value = fields[name], value != .null else {
            if required { errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) is required")) }
            return nil
        }
        let whole: Int? =
            switch value {
            case .int(let integer): integer
            case .double(let number): Int(exactly: number)
            default: nil
            }
        guard let whole, range.contains(whole) else {
            errors.append(
                FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            )
            return nil
        }
        return whole
    }

    /// A finite number in `range`.
    package mutating func number(_ name: String, required: Bool, in range: ClosedRange<Double>) -> Double? {
        guard let value = fields[name], value != .null else {
            if required { errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) is required")) }
            return nil
        }
        let number: Double? =
            switch value {
            case .int(let integer): Double(integer)
            case .double(let number): number
            default: nil
            }
        guard let number, number.isFinite, range.contains(number) else {
            errors.append(
                FieldError(.body(pointer: "\(pointer)/\(name)"), "\(name) must be a number from \(range.lowerBound) to \(range.upperBound)")
            )
            return nil
        }
        return number
    }

    package mutating func fail(_ name: String, _ detail: String) {
        errors.append(FieldError(.body(pointer: "\(pointer)/\(name)"), detail))
    }

    /// - Throws: 422 listing every field that failed.
    package func validate() throws {
        if !errors.isEmpty { throw Problem.validation(errors) }
    }
}
