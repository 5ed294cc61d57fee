import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// Entity tags that are a resource's version (`"7"`): what a client sends back in `If-Match` to
/// change the resource only if no one else has since (optimistic concurrency), and in
/// `If-None-Match` to learn it has not changed.
package enum VersionTag {
    package static func tag(_ version: Int) -> String { "\"\(version)\"" }

    /// `body` at `version` with its `ETag`; for a read, 304 when `If-None-Match` names it.
    package static func response(
        _ body: some Encodable,
        status: HTTPResponse.Status = .ok,
        version: Int,
        request: Request? = nil,
        headers: HTTPFields = [:]
    ) throws -> Response {
        var headers = headers
        headers[.eTag] = tag(version)
        if let request, EntityTag.matches(request.headers[.ifNoneMatch], tag(version)) {
            return Response(status: .notModified, headers: headers)
        }
        return try JSONBody.response(status, body, headers: headers)
    }

    /// The version `If-Match` names; `nil` for `*`, which matches whatever version there is
    /// (RFC 9110: the client asks only that the resource exist).
    /// - Throws: 428 without `If-Match`; 412 when it names no version (it cannot match).
    package static func expected(_ request: Request) throws -> Int? {
        guard let header = request.headers[.ifMatch]?.trimmingCharacters(in: .whitespaces), !header.isEmpty else {
            throw Problem.versionRequired
        }
        if header == "*" { return nil }
        var text = Substring(header)
        if text.hasPrefix("W/") { text = text.dropFirst(2) }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        guard let version = Int(text), version > 0 else {
            throw Problem(
                status: .preconditionFailed,
                type: "version-mismatch",
                title: "Changed meanwhile",
                detail: "If-Match must be the ETag you read (a version such as \"3\")."
            )
        }
        return version
    }

    /// The version `If-Match` names, where it may be left out (an update an app queued offline
    /// sends it; GoTrue's and PostgREST's clients never do): `nil` without it or for `*`.
    /// - Throws: 412 when it names no version.
    package static func optional(_ request: Request) throws -> Int? {
        guard let header = request.headers[.ifMatch], !header.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        return try expected(request)
    }
}

extension Problem {
    /// 412: the resource changed since the version the request names.
    package static func stale(current: Int) -> Problem {
        Problem(
            status: .preconditionFailed,
            type: "version-mismatch",
            title: "Changed meanwhile",
            detail: "It is at version \(current) now; read it again and retry with If-Match: \"\(current)\"."
        )
    }

    /// 428: a change without `If-Match`.
    package static var versionRequired: Problem {
        Problem(
            status: .preconditionRequired,
            type: "if-match-required",
            title: "If-Match required",
            detail: "Send If-Match with the ETag you read, so that changes made meanwhile are not lost."
        )
    }
}
