import Foundation
import Identity
import ServiceKit

/// A request's JSON object body, read field by field so that each bad field is a 422 naming it
/// (and a body that is no JSON object a 400).
struct JSONObject {
    let fields: [String: JSONValue]
    private(set) var errors: [FieldError] = []

    init(_ body: [UInt8]) throws {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            throw Problem(status: .badRequest, type: "malformed-body", title: "Malformed request body", detail: "the body is not a JSON object")
        }
        fields = object
    }

    /// A text field of at most `maxCharacters` characters — grapheme clusters, as people count
    /// them (an emoji with a skin tone is one).
    mutating func text(_ name: String, required: Bool, maxCharacters: Int, allowEmpty: Bool = true) -> String? {
        guard let value = fields[name], value != .null else {
            if required { errors.append(FieldError(.body(pointer: "/\(name)"), "\(name) is required")) }
            return nil
        }
        guard case .string(let text) = value else {
            errors.append(FieldError(.body(pointer: "/\(name)"), "\(name) must be a string"))
            return nil
        }
        if !allowEmpty, text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            errors.append(FieldError(.body(pointer: "/\(name)"), "\(name) must not be empty"))
            return nil
        }
        guard text.count <= maxCharacters else {
            errors.append(FieldError(.body(pointer: "/\(name)"), "\(name) is \(text.count) characters long; at most \(maxCharacters)"))
            return nil
        }
        return text
    }

    mutating func bool(_ name: String, required: Bool) -> Bool? {
        guard let value = fields[name], value != .null else {
            if required { errors.append(FieldError(.body(pointer: "/\(name)"), "\(name) is required")) }
            return nil
        }
        guard case .bool(let flag) = value else {
            errors.append(FieldError(.body(pointer: "/\(name)"), "\(name) must be true or false"))
            return nil
        }
        return flag
    }

    mutating func fail(_ name: String, _ detail: String) {
        errors.append(FieldError(.body(pointer: "/\(name)"), detail))
    }

    /// - Throws: 422 listing every field that failed.
    func validate() throws {
        if !errors.isEmpty { throw Problem.validation(errors) }
    }
}
