import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

extension Request {
    /// The body decoded as JSON into `Body`.
    /// - Throws: `AuthError.badJSON` for an empty body, text that is not JSON (invalid UTF-8
    ///   included), fields of the wrong type or text holding U+0000 (which Postgres cannot store);
    ///   ServiceKit's 413 for a body over the route's limit.
    func decodeJSON<Body: Decodable>(as type: Body.Type, context: some ServiceRequestContext) async throws -> Body {
        var request = self
        let buffer = try await request.collectBody(upTo: context.maxUploadSize)
        guard buffer.readableBytes > 0 else { throw AuthError.badJSON("Request body is empty; expected a JSON object") }
        guard !JSONText.containsNUL(buffer.readableBytesView) else {
            throw AuthError.badJSON("Text in the body may not hold the NUL character (\\u0000)")
        }
        do {
            return try JSONDecoder().decode(Body.self, from: Data(buffer: buffer))
        } catch let error as DecodingError {
            throw AuthError.badJSON("Could not parse request body as JSON: \(error.clientDescription)")
        }
    }
}

extension HTTPField.Name {
    static let forwardedFor = Self("X-Forwarded-For")!
}
