import Foundation
import Hummingbird

/// The JSON document of a problem response, with the occurrence's `instance` and request id.
struct ProblemDocument: Encodable {
    var problem: Problem
    var instance: String
    var requestID: String

    private enum CodingKeys: String, CodingKey {
        case type, title, status, detail, instance, errors, requestId
    }

    private struct ExtensionKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(problem.type, forKey: .type)
        try container.encode(problem.title, forKey: .title)
        try container.encode(problem.status.code, forKey: .status)
        try container.encodeIfPresent(problem.detail, forKey: .detail)
        try container.encode(instance, forKey: .instance)
        if !problem.errors.isEmpty {
            try container.encode(problem.errors, forKey: .errors)
        }
        if !requestID.isEmpty {
            try container.encode(requestID, forKey: .requestId)
        }
        var extensions = encoder.container(keyedBy: ExtensionKey.self)
        for (name, value) in problem.extensions.sorted(by: { $0.key < $1.key }) {
            try extensions.encode(value, forKey: ExtensionKey(stringValue: name))
        }
    }
}

extension Problem {
    /// The media type of problem responses.
    package static let mediaType = "application/problem+json"

    /// The response for this problem, occurring at `path` during request `requestID`.
    package func response(path: String, requestID: String) -> Response {
        let (headers, body) = document(path: path, requestID: requestID)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The headers (this problem's own and the problem media type) and JSON body of the response
    /// for this problem, for code that writes responses itself.
    /// Under `/rest/v1` (the PostgREST-compatible data API) it is in PostgREST's shape instead.
    package func document(path: String, requestID: String) -> (headers: HTTPFields, body: ByteBuffer) {
        if PostgRESTError.covers(path) {
            var headers = self.headers
            headers[.contentType] = "application/json; charset=utf-8"
            return (headers, ByteBuffer(bytes: PostgRESTError(self).json))
        }
        let document = ProblemDocument(problem: self, instance: path, requestID: requestID)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings and integers cannot fail; an empty body is the safe fallback regardless.
        let body = (try? encoder.encode(document)) ?? Data()
        var headers = self.headers
        headers[.contentType] = Self.mediaType
        return (headers, ByteBuffer(bytes: body))
    }
}
