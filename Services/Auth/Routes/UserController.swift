import Foundation
import Hummingbird
import Identity
import ServiceKit

/// The signed-in user's own routes: `GET`/`PUT /user`, `POST /user/onboarding`, `POST /logout`.
struct UserController: Sendable {
    let accounts: Accounts
    let sessions: Sessions
    let authenticator: BearerAuthenticator

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("user", use: user)
        router.put("user", use: update)
        router.post("user/onboarding", use: completeOnboarding)
        router.post("logout", use: logout)
    }

    private struct UpdateBody: Decodable {
        var email: String?
        var password: String?
        var data: [String: JSONValue]?
        var appMetadata: JSONValue?

        private enum CodingKeys: String, CodingKey {
            case email, password, data
            case appMetadata = "app_metadata"
        }
    }

    @Sendable func user(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        try await authenticator.withSession(request) { session, connection in
            guard let user = try await connection.user(id: session.userID, logger: context.logger) else { throw AuthError.userNotFound }
            return UserResponse(user: user)
        }
    }

    @Sendable func update(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        let session = try await authenticator.authenticate(request)
        let body = try await request.decodeJSON(as: UpdateBody.self, context: context)
        if body.appMetadata != nil {
            throw AuthError.notAdmin("app_metadata can only be changed by auth")
        }
        let changes = Accounts.Changes(email: body.email, password: body.password, metadata: body.data)
        return UserResponse(user: try await accounts.update(session, changes))
    }

    @Sendable func completeOnboarding(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        try await authenticator.withSession(request) { session, connection in
            UserResponse(user: try await accounts.completeOnboarding(session, on: connection))
        }
    }

    @Sendable func logout(_ request: Request, context: AppRequestContext) async throws -> Response {
        let scopeName = request.uri.queryParameters.get("scope") ?? Sessions.LogoutScope.global.rawValue
        guard let scope = Sessions.LogoutScope(rawValue: scopeName) else {
            throw AuthError.validationFailed("scope must be global, local or others")
        }
        // A token whose session already ended signs out nothing more, and that is not an error:
        // the client wanted to be signed out and is.
        let session = try authenticator.verifiedToken(request)
        try await sessions.logout(session, scope: scope)
        return Response(status: .noContent)
    }
}
