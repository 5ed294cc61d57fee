import Foundation
import Hummingbird
import Identity
import ServiceKit

/// The signed-in user's own routes: `GET`/`PUT`/`DELETE /user`, `GET /reauthenticate`,
/// `POST /user/onboarding`, `POST /logout`.
struct UserController: Sendable {
    let accounts: Accounts
    let sessions: Sessions
    let authenticator: BearerAuthenticator
    let flows: CodeFlows
    let deletion: AccountDeletion
    /// `AUTH_SECURE_EMAIL_CHANGE`: a new address is confirmed from the current one too.
    let secureEmailChange: Bool
    /// `AUTH_SECURE_PASSWORD_CHANGE`: a session older than a day changes the password only with a
    /// nonce from `/reauthenticate`.
    let securePasswordChange: Bool

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("user", use: user)
        router.put("user", use: update)
        router.delete("user", use: delete)
        router.get("reauthenticate", use: reauthenticate)
        router.post("user/onboarding", use: completeOnboarding)
        router.post("logout", use: logout)
    }

    private struct UpdateBody: Decodable {
        var email: String?
        var password: String?
        var nonce: String?
        var data: [String: JSONValue]?
        var appMetadata: JSONValue?

        private enum CodingKeys: String, CodingKey {
            case email, password, nonce, data
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
        // A new address is checked before anything changes, and applied only once confirmed.
        if let email = body.email { _ = try CodeFlows.address(email) }
        if let password = body.password, securePasswordChange, try await deletion.isOlderThanADay(session) {
            try accounts.passwordPolicy.check(password)
            guard let nonce = body.nonce, !nonce.isEmpty else { throw AuthError.reauthenticationNeeded }
            try await deletion.prove(session, nonce: nonce)
        }
        var user = try await accounts.update(session, Accounts.Changes(password: body.password, metadata: body.data))
        if let email = body.email {
            let redirect = request.uri.queryParameters.get("redirect_to").map { String($0) }
            try await flows.requestEmailChange(of: session.userID, to: email, secure: secureEmailChange, redirectTo: redirect)
            user = try await accounts.user(session.userID)
        }
        return UserResponse(user: user)
    }

    /// `GET /reauthenticate`: `{}`, and a nonce mailed to the account's address.
    @Sendable func reauthenticate(_ request: Request, context: AppRequestContext) async throws -> CodesController.Nothing {
        try await deletion.reauthenticate(try await authenticator.authenticate(request))
        return CodesController.Nothing()
    }

    private struct DeleteBody: Decodable {
        var password: String?
        var nonce: String?
    }

    /// `DELETE /user` with `{"password"}` or `{"nonce"}`: 204, the account gone.
    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> Response {
        let session = try await authenticator.authenticate(request)
        let body = try await request.decodeJSON(as: DeleteBody.self, context: context)
        let proof: AccountDeletion.Proof? =
            if let password = body.password, !password.isEmpty { .password(password) } else { body.nonce.flatMap { $0.isEmpty ? nil : .nonce($0) } }
        try await deletion.deleteOwn(session, proof: proof)
        return Response(status: .noContent)
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
