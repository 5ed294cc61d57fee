import Hummingbird

/// An RFC 9457 problem: the body of every error response (`application/problem+json`).
///
/// Domain errors are Swift enums conforming to `ProblemConvertible`; `ProblemMiddleware` turns them
/// into responses at one place. A `Problem` can also be thrown as it is.
package struct Problem: Error, Sendable, Equatable {
    /// A URI naming the kind of problem: `urn:splash:problem:<slug>`, or `about:blank` when the
    /// status code says all there is to say.
    package var type: String
    /// A short summary of the kind of problem, the same for every occurrence.
    package var title: String
    package var status: HTTPResponse.Status
    /// What happened this time, in words a client developer can act on.
    package var detail: String?
    /// Field-level validation failures, for `validation` problems.
    package var errors: [FieldError]
    /// Extra response headers, such as `Retry-After`.
    package var headers: HTTPFields
    /// Extension members of the problem document (RFC 9457 §3.2), for a client to read what the
    /// detail says in words: an order's `currentStatus`, say.
    package var extensions: [String: String]

    package init(
        status: HTTPResponse.Status,
        type slug: String? = nil,
        title: String? = nil,
        detail: String? = nil,
        errors: [FieldError] = [],
        headers: HTTPFields = [:],
        extensions: [String: String] = [:]
    ) {
        self.type = slug.map { "urn:splash:problem:\($0)" } ?? "about:blank"
        self.title = title ?? status.reasonPhrase
        self.status = status
        self.detail = detail
        self.errors = errors
        self.headers = headers
        self.extensions = extensions
    }

    /// A 422 listing every field that failed validation.
    package static func validation(_ errors: [FieldError], detail: String? = nil) -> Problem {
        Problem(
            status: .unprocessableContent,
            type: "validation",
            title: "Request validation failed",
            detail: detail ?? errors.first.map { errors.count == 1 ? $0.detail : "\(errors.count) fields are invalid" },
            errors: errors
        )
    }
}

/// One failed field of a validation problem, located by where the value came from.
package struct FieldError: Sendable, Equatable, Encodable {
    package enum Location: Sendable, Equatable {
        /// A JSON Pointer into the request body, e.g. `/username`.
        case body(pointer: String)
        /// A query or path parameter, e.g. `per_page`.
        case parameter(String)
        /// A request header, e.g. `Idempotency-Key`.
        case header(String)
    }

    package var location: Location
    package var detail: String

    package init(_ location: Location, _ detail: String) {
        self.location = location
        self.detail = detail
    }

    private enum CodingKeys: String, CodingKey {
        case detail, pointer, parameter, header
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(detail, forKey: .detail)
        switch location {
        case .body(let pointer): try container.encode("#" + pointer, forKey: .pointer)
        case .parameter(let name): try container.encode(name, forKey: .parameter)
        case .header(let name): try container.encode(name, forKey: .header)
        }
    }
}

/// A domain error that has an HTTP problem form.
package protocol ProblemConvertible: Error {
    var problem: Problem { get }
}

extension Problem: ProblemConvertible {
    package var problem: Problem { self }
}

/// An error that says a dependency (a database, say) failed for the moment — a connection lost, a
/// server shutting down — rather than that the request was wrong or the code broken. The edge
/// answers it with a 503 and `Retry-After`, as it does an unreachable upstream, never a 500.
package protocol TransientFailure: Error {
    var isTransient: Bool { get }
}
