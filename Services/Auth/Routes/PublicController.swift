import Foundation
import Hummingbird
import Identity
import ServiceKit

/// Routes anyone may call: the signing keys, recent sign-ups and the user count. None of them
/// ever shows an email.
struct PublicController: Sendable {
    let accounts: Accounts
    let keys: JSONWebKeySet

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get(".well-known/jwks.json", use: jwks)
        router.get("users/recent", use: recent)
        router.get("users/count", use: count)
    }

    struct UserCount: ResponseEncodable {
        var count: Int
    }

    @Sendable func jwks(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try JSONEncoder().encode(keys)
        var headers: HTTPFields = [.contentType: "application/json"]
        // Verifiers cache the set; a rotation publishes the new key before it signs anything.
        headers[.cacheControl] = "public, max-age=600"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    @Sendable func recent(_ request: Request, context: AppRequestContext) async throws -> [RecentSignUp] {
        let raw = request.uri.queryParameters.get("limit")
        guard let limit = raw.map({ Int($0) }) ?? 20, (1...100).contains(limit) else {
            throw AuthError.validationFailed("limit must be a whole number from 1 to 100")
        }
        return try await accounts.recentSignUps(limit: limit)
    }

    @Sendable func count(_ request: Request, context: AppRequestContext) async throws -> UserCount {
        UserCount(count: try await accounts.userCount())
    }
}
