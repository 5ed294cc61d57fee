import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// JSON as Splash's APIs write it: the events' encoding (sorted camelCase keys, RFC 3339 dates with
/// milliseconds), so a resource reads the same in a response and in an event.
package enum JSONBody {
    package static func encode(_ body: some Encodable) throws -> ByteBuffer {
        if let writable = body as? any JSONWritable {
            var writer = JSONWriter()
            writable.write(to: &writer)
            return ByteBuffer(bytes: writer.bytes)
        }
        return ByteBuffer(bytes: try EventJSON.encoder.encode(body))
    }

    /// A JSON response with `status`.
    package static func response(_ status: HTTPResponse.Status, _ body: some Encodable, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: try encode(body)))
    }

    /// A 200 JSON response with its `ETag`, or 304 when the client already has it.
    package static func tagged(_ body: some Encodable, for request: Request, headers: HTTPFields = [:]) throws -> Response {
        EntityTag.response(to: request, body: try encode(body), headers: headers)
    }

    /// A sync answer with its `ETag`, or 304: the tag is of what it lists, not of its token (nor
    /// of the token its next page's cursor carries), which moves with every transaction of the
    /// database. A phone answered 304 keeps the token it has: nothing of the list changed since it,
    /// so it syncs from it as well as from a new one.
    package static func tagged<Item: Encodable>(_ page: SyncPage<Item>, for request: Request, headers: HTTPFields = [:]) throws -> Response {
        try tagged(page, as: page, for: request, headers: headers)
    }

    /// `body`, a sync answer written in a shape of its own, tagged as `page` is: the tag of the
    /// body as written, less every mention of its token (its `syncToken`, the end of its
    /// `nextCursor`), so the body is encoded once.
    package static func tagged<Item: Encodable>(
        _ body: some Encodable,
        as page: SyncPage<Item>,
        for request: Request,
        headers: HTTPFields = [:]
    ) throws -> Response {
        let encoded = try encode(body)
        let listed = String(buffer: encoded).replacingOccurrences(of: page.syncToken.description, with: "")
        return EntityTag.response(to: request, body: encoded, headers: headers, tag: EntityTag.of(Array(listed.utf8)))
    }

    /// `value` as JSON text, for a `jsonb` parameter.
    package static func text(_ value: some Encodable) throws -> String {
        String(decoding: try EventJSON.encoder.encode(value), as: UTF8.self)
    }
}
