import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// A create request's `Idempotency-Key` and a hash of its body: stored with the resource it made
/// (unique per user and key), so a retry with the same key and body gets that resource again
/// (`Idempotent-Replayed: true`) and the same key with another body is refused (422
/// `idempotency-key-reused`).
package struct IdempotencyKey: Sendable, Equatable {
    package var key: String
    /// SHA-256 of the request body, hex.
    package var requestHash: String

    package init(key: String, body: some Sequence<UInt8>) {
        self.init(key: key, requestHash: SHA256.hash(data: Array(body)).hexEncoded)
    }

    /// A key whose request was hashed as it streamed (`KeyedUploadBody`).
    package init(key: String, requestHash: String) {
        self.key = key
        self.requestHash = requestHash
    }

    /// The request's key and its body's hash.
    /// - Throws: 422 naming `Idempotency-Key` when the header is missing or not 1–255 characters.
    package init(_ request: Request, body: some Sequence<UInt8>, what: String) throws {
        self.init(key: try Self.key(of: request, what: what), body: body)
    }

    /// The request's `Idempotency-Key`, checked.
    /// - Throws: 422 naming `Idempotency-Key` when the header is missing or not 1–255 characters.
    package static func key(of request: Request, what: String) throws -> String {
        guard let key = request.headers[.idempotencyKey]?.trimmingCharacters(in: .whitespaces), (1...255).contains(key.unicodeScalars.count) else {
            throw Problem.validation([
                FieldError(.header("Idempotency-Key"), "send a unique key (1–255 characters) with every new \(what); resend it to retry")
            ])
        }
        return key
    }

    /// As `key(of:what:)` where the key may be left out (`nil` then).
    package static func optionalKey(of request: Request, what: String) throws -> String? {
        request.headers[.idempotencyKey] == nil ? nil : try key(of: request, what: what)
    }

    /// What the store found for the key.
    package enum Outcome<Resource: Sendable>: Sendable {
        case created(Resource)
        /// The same key and body as an earlier request: what that request made.
        case replayed(Resource)
        /// The same key with a different body.
        case keyReused

        /// Whether this request made the resource (rather than finding an earlier request's).
        package var isCreated: Bool {
            if case .created = self { true } else { false }
        }
    }

    /// The answer to `outcome`: the resource's response, marked when replayed.
    /// - Throws: 422 `idempotency-key-reused` for `.keyReused`.
    package static func response<Resource>(_ outcome: Outcome<Resource>, body: (Resource) throws -> Response) throws -> Response {
        switch outcome {
        case .created(let resource):
            return try body(resource)
        case .replayed(let resource):
            var response = try body(resource)
            response.headers[.idempotentReplayed] = "true"
            return response
        case .keyReused:
            throw Problem(
                status: .unprocessableContent,
                type: "idempotency-key-reused",
                title: "Idempotency key reused",
                detail: "This Idempotency-Key was used for a different request; use a new key for a new one."
            )
        }
    }
}

extension HTTPField.Name {
    package static let idempotencyKey = Self("Idempotency-Key")!
    package static let idempotentReplayed = Self("Idempotent-Replayed")!
}
