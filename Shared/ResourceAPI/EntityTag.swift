import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import NIOCore

/// Strong entity tags of response bodies, and the `If-None-Match` answer (RFC 9110): the one way a
/// Splash service tags what it serves and answers a client that already has it.
package enum EntityTag {
    /// `"<first 128 bits of the body's SHA-256, base64url>"`: the same body always gets the same
    /// tag, on every replica.
    package static func of(_ body: some Sequence<UInt8>) -> String {
        tag(SHA256.hash(data: Array(body)))
    }

    /// The tag of `body`'s readable bytes, hashed where they are.
    package static func of(_ body: ByteBuffer) -> String {
        tag(body.withUnsafeReadableBytes { SHA256.hash(data: $0) })
    }

    private static func tag(_ digest: SHA256.Digest) -> String {
        "\"\(Base64URL.encode(digest.prefix(16)))\""
    }

    /// Whether an `If-None-Match` list names `etag` (weak comparison, as RFC 9110 asks for it),
    /// or is `*`.
    package static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let opaque = etag.hasPrefix("W/") ? String(etag.dropFirst(2)) : etag
        return ifNoneMatch.split(separator: ",").contains { candidate in
            let trimmed = candidate.trimmingCharacters(in: .whitespaces)
            return trimmed == "*" || (trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed) == opaque
        }
    }

    /// `body` with its `ETag` (`given`, or the body's own), or 304 with no body when the request's
    /// `If-None-Match` already names it. `headers` go on either answer.
    package static func response(
        to request: Request,
        body: ByteBuffer,
        contentType: String = "application/json",
        headers: HTTPFields = [:],
        tag given: String? = nil
    ) -> Response {
        var headers = headers
        let tag = given ?? of(body)
        headers[.eTag] = tag
        if matches(request.headers[.ifNoneMatch], tag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = contentType
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
