import Foundation
import Hummingbird
import Identity
import ServiceKit

/// A request's JSON object body, decoded field by field through `JSONObject`: every field that is
/// wrong is a 422 naming it (all of them at once), and a body that is no JSON object is a 400.
/// Conforming types read their fields in `init(reading:)` and finish with `body.validated(…)`.
package protocol JSONObjectBody: Decodable, Sendable {
    /// Reads the body's fields.
    /// - Throws: 422 listing every field that failed (`JSONObject.validated`).
    init(reading body: inout JSONObject) throws
}

extension JSONObjectBody {
    package init(from decoder: any Decoder) throws {
        var body = try JSONObject(from: decoder)
        try self.init(reading: &body)
    }
}

extension JSONObject {
    /// The JSON object `decoder` holds.
    /// - Throws: 400 `malformed-body` when it holds another value.
    package init(from decoder: any Decoder) throws {
        guard case .object(let fields) = try JSONValue(from: decoder) else { throw JSONObject.notAnObject }
        self.init(fields: fields, at: "")
    }

    /// The values read, once every field read well. Read them into constants first: in
    /// `body.validated(body.text(…))` the body is taken before the read adds its error.
    /// - Throws: 422 listing every field that did not.
    package func validated<each Value>(_ values: repeat (each Value)?) throws -> (repeat each Value) {
        try validate()
        return (repeat try Self.present(each values))
    }

    private static func present<Value>(_ value: Value?) throws -> Value {
        guard let value else {
            // Only a field read as optional can be missing without an error: a reader's mistake.
            throw Problem(status: .internalServerError, type: "internal-error", detail: "A request field was not read.")
        }
        return value
    }
}

extension Request {
    /// The body, up to the route's limit, decoded as `Body`.
    /// - Throws: 400 `malformed-body` for a body that is not a JSON object (or holds U+0000, which
    ///   Postgres cannot store), 422 naming each bad field, 413 past the limit.
    package mutating func decodeBody<Body: JSONObjectBody>(as type: Body.Type, context: some ServiceRequestContext) async throws -> Body {
        try JSONObject.decode(Body.self, from: Array(buffer: try await collectBody(upTo: context.maxUploadSize)))
    }

    /// The body of a create, and its `Idempotency-Key` with the body's hash (the key is checked
    /// first: a retry is recognised whatever its body says).
    /// - Throws: 422 naming `Idempotency-Key` when it is missing, then as `decodeBody`.
    package mutating func decodeCreation<Body: JSONObjectBody>(
        as type: Body.Type,
        what: String,
        context: some ServiceRequestContext
    ) async throws -> (body: Body, key: IdempotencyKey) {
        let bytes = Array(buffer: try await collectBody(upTo: context.maxUploadSize))
        let key = try IdempotencyKey(self, body: bytes, what: what)
        return (try JSONObject.decode(Body.self, from: bytes), key)
    }

    /// As `decodeCreation`, where the `Idempotency-Key` may be left out (`nil` then).
    package mutating func decodeCreation<Body: JSONObjectBody>(
        as type: Body.Type,
        optionalKeyFor what: String,
        context: some ServiceRequestContext
    ) async throws -> (body: Body, key: IdempotencyKey?) {
        let bytes = Array(buffer: try await collectBody(upTo: context.maxUploadSize))
        let key = try IdempotencyKey.optionalKey(of: self, what: what).map { IdempotencyKey(key: $0, body: bytes) }
        return (try JSONObject.decode(Body.self, from: bytes), key)
    }
}

extension Parameters {
    /// The path parameter `name` as a UUID.
    /// - Throws: `notFound` when it is no UUID, as an id that is not one names nothing.
    package func uuid(_ name: String, orThrow notFound: @autoclosure () -> Problem) throws -> UUID {
        guard let id = get(name).flatMap(UUID.init(uuidString:)) else { throw notFound() }
        return id
    }
}
