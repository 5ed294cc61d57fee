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

    /// The response for this problem, occurring at `path` during request `requestID`, in the
    /// shape a client expects there (`ErrorShape`; `headers` are the request's).
    package func response(path: String, requestID: String, headers: HTTPFields = [:]) -> Response {
        let (headers, body) = document(path: path, requestID: requestID, headers: headers)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The headers (this problem's own and the media type) and JSON body of the response for
    /// this problem, for code that writes responses itself: problem JSON, or under a Supabase
    /// protocol's path that protocol's error shape (`ErrorShape`; `headers` are the request's).
    package func document(path: String, requestID: String, headers requestHeaders: HTTPFields = [:]) -> (headers: HTTPFields, body: ByteBuffer) {
        switch ErrorShape(path: path, headers: requestHeaders) {
        case .postgREST:
            var headers = self.headers
            headers[.contentType] = "application/json; charset=utf-8"
            return (headers, ByteBuffer(bytes: PostgRESTError(self, path: path).json))
        case .goTrue(let apiVersion):
            return GoTrueError.document(for: self, apiVersion: apiVersion)
        case .storage:
            return StorageErrorBody.document(for: self)
        case .problemJSON:
            break
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
