import Foundation
import Hummingbird
import Identity
import ServiceKit

/// `POST /signup` and `POST /token` (`grant_type=password`, `refresh_token` or `pkce`).
///
/// Neither looks at the `Authorization` header: GoTrue clients send their API key there before
/// sign-in, and it must not turn a sign-in into a 401.
struct TokenController: Sendable {
    let accounts: Accounts
    let sessions: Sessions
    let flows: CodeFlows
    let apple: AppleSignIn
    /// `AUTH_EMAIL_CONFIRM`: sign-up answers the User only and mails a code to confirm the address.
    let confirmsEmail: Bool
    let addresses: ClientAddressResolver
    let tokenRequests: RateLimiter
    let signUps: RateLimiter
    let failedSignIns: RateLimiter

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.post("signup", use: signUp)
        router.post("token", use: token)
    }

    private struct SignUpBody: Decodable {
        var email: String?
        var password: String?
        var data: [String: JSONValue]?
    }

    private struct TokenBody: Decodable {
        var email: String?
        var password: String?
        var refreshToken: String?
        var authCode: String?
        var codeVerifier: String?
        var provider: String?
        var idToken: String?
        var nonce: String?

        private enum CodingKeys: String, CodingKey {
            case email, password
            case refreshToken = "refresh_token"
            case authCode = "auth_code"
            case codeVerifier = "code_verifier"
            case provider, nonce
            case idToken = "id_token"
        }
    }

    /// A Session; with `AUTH_EMAIL_CONFIRM`, the User alone (GoTrue's answer before confirmation).
    @Sendable func signUp(_ request: Request, context: AppRequestContext) async throws -> Response {
        try signUps.admit(request, context, addresses: addresses)
        let body = try await request.decodeJSON(as: SignUpBody.self, context: context)
        guard let email = body.email, !email.isEmpty else { throw AuthError.validationFailed("To signup, please provide your email") }
        guard let password = body.password, !password.isEmpty else { throw AuthError.validationFailed("Signup requires a valid password") }
        if confirmsEmail {
            let user = try await flows.signUpToConfirm(
                email: email,
                password: password,
                metadata: body.data ?? [:],
                redirectTo: request.uri.queryParameters.get("redirect_to")
            )
            return try UserResponse(user: user).response(from: request, context: context)
        }
        let (tokens, user) = try await accounts.signUp(
            email: email,
            password: password,
            metadata: body.data ?? [:],
            userAgent: request.headers[.userAgent]
        )
        return try SessionResponse(tokens: tokens, user: user).response(from: request, context: context)
    }

    @Sendable func token(_ request: Request, context: AppRequestContext) async throws -> SessionResponse {
        try tokenRequests.admit(request, context, addresses: addresses)
        switch request.uri.queryParameters.get("grant_type") {
        case "password":
            return try await signIn(request, context: context)
        case "refresh_token":
            let body = try await request.decodeJSON(as: TokenBody.self, context: context)
            guard let presented = body.refreshToken, !presented.isEmpty else {
                throw AuthError.validationFailed("refresh_token is required")
            }
            guard let refreshToken = RefreshToken(presented: presented) else {
                throw AuthError.validationFailed("refresh_token is not a valid refresh token")
            }
            let (tokens, user) = try await sessions.refresh(refreshToken)
            return SessionResponse(tokens: tokens, user: user)
        case "pkce":
            let body = try await request.decodeJSON(as: TokenBody.self, context: context)
            guard let code = body.authCode, !code.isEmpty, let verifier = body.codeVerifier, !verifier.isEmpty else {
                throw AuthError.validationFailed("invalid request: both auth code and code verifier should be non-empty")
            }
            let (tokens, user) = try await flows.exchange(authCode: code, verifier: verifier, userAgent: request.headers[.userAgent])
            return SessionResponse(tokens: tokens, user: user)
        case "id_token":
            let body = try await request.decodeJSON(as: TokenBody.self, context: context)
            guard body.provider == "apple" else { throw AuthError.validationFailed("provider must be apple") }
            guard let token = body.idToken, !token.isEmpty else { throw AuthError.validationFailed("id_token is required") }
            let (tokens, user) = try await apple.signIn(idToken: token, nonce: body.nonce, userAgent: request.headers[.userAgent])
            return SessionResponse(tokens: tokens, user: user)
        case let other:
            throw AuthError.validationFailed(
                other == nil ? "grant_type is required" : "unsupported grant_type; use password, refresh_token, pkce or id_token"
            )
        }
    }

    private func signIn(_ request: Request, context: AppRequestContext) async throws -> SessionResponse {
        let body = try await request.decodeJSON(as: TokenBody.self, context: context)
        guard let email = body.email, !email.isEmpty, let password = body.password, !password.isEmpty else {
            throw AuthError.validationFailed("email and password are required")
        }
        guard email.utf8.count <= EmailAddress.maximumBytes else {
            throw AuthError.validationFailed("Unable to validate email address: invalid format")
        }
        // Failures count per account whether or not the account exists, so the limit itself
        // tells nothing about which emails are registered.
        let account = email.trimmingCharacters(in: .whitespaces).lowercased()
        if let wait = failedSignIns.waitTime(account) {
            throw AuthError.overRequestRateLimit(retryAfterSeconds: wait)
        }
        do {
            let (tokens, user) = try await accounts.signIn(email: email, password: password, userAgent: request.headers[.userAgent])
            return SessionResponse(tokens: tokens, user: user)
        } catch AuthError.invalidCredentials {
            _ = failedSignIns.acquire(account)
            throw AuthError.invalidCredentials
        }
    }

}
