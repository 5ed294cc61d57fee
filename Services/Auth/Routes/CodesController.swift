import Foundation
import HTTPTypes
import Hummingbird
import Identity
import ServiceKit

/// GoTrue's mailed flows and its settings: `POST /recover`, `POST /otp`, `POST /verify`,
/// `GET /verify` (the mailed link), `POST /resend` and `GET /settings`. The per-IP limit of
/// `/token` counts their requests too; `redirect_to` comes in the query, as GoTrue's clients send it.
struct CodesController: Sendable {
    let flows: CodeFlows
    let settings: AuthSettings
    let secureEmailChange: Bool
    let addresses: ClientAddressResolver
    let requests: RateLimiter

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.post("recover", use: recover)
        router.post("otp", use: otp)
        router.post("verify", use: verify)
        router.get("verify", use: followLink)
        router.post("resend", use: resend)
        router.get("settings", use: showSettings)
    }

    /// What every one of these bodies may carry.
    private struct FlowBody: Decodable {
        var email: String?
        var phone: String?
        var createUser: Bool?
        var data: [String: JSONValue]?
        var type: String?
        var token: String?
        var tokenHash: String?
        var codeChallenge: String?
        var codeChallengeMethod: String?

        private enum CodingKeys: String, CodingKey {
            case email, phone, data, type, token
            case createUser = "create_user"
            case tokenHash = "token_hash"
            case codeChallenge = "code_challenge"
            case codeChallengeMethod = "code_challenge_method"
        }

        func requireEmail() throws(AuthError) -> String {
            if phone != nil, email == nil { throw .validationFailed("Phone sign-in is not available; use email") }
            guard let email, !email.isEmpty else { throw .validationFailed("An email address is required") }
            return email
        }

        /// The PKCE challenge, when the client sent one.
        func challenge() throws(AuthError) -> OneTimeCodes.Challenge? {
            switch (codeChallenge, codeChallengeMethod) {
            case (nil, nil): return nil
            case (let value?, let method?):
                guard let method = OneTimeCodes.Challenge.Method(rawValue: method.lowercased()) else {
                    throw .validationFailed("code_challenge_method must be s256 or plain")
                }
                guard (43...128).contains(value.utf8.count), value.utf8.allSatisfy({ Self.challengeBytes.contains($0) }) else {
                    throw .validationFailed("code_challenge must be 43 to 128 characters of A-Z, a-z, 0-9, -, ., _ and ~")
                }
                return OneTimeCodes.Challenge(value: value, method: method)
            default:
                throw .validationFailed("code_challenge and code_challenge_method come together")
            }
        }

        private static let challengeBytes = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    }

    struct Nothing: ResponseEncodable {}

    @Sendable func recover(_ request: Request, context: AppRequestContext) async throws -> Nothing {
        try requests.admit(request, context, addresses: addresses)
        let body = try await request.decodeJSON(as: FlowBody.self, context: context)
        try await flows.recover(email: try body.requireEmail(), challenge: try body.challenge(), redirectTo: redirectTo(request))
        return Nothing()
    }

    @Sendable func otp(_ request: Request, context: AppRequestContext) async throws -> Nothing {
        try requests.admit(request, context, addresses: addresses)
        let body = try await request.decodeJSON(as: FlowBody.self, context: context)
        try await flows.signInWithCode(
            email: try body.requireEmail(),
            createUser: body.createUser ?? true,
            metadata: body.data ?? [:],
            challenge: try body.challenge(),
            redirectTo: redirectTo(request)
        )
        return Nothing()
    }

    /// A Session, or GoTrue's message when one side of a secure email change is still to come.
    @Sendable func verify(_ request: Request, context: AppRequestContext) async throws -> Response {
        try requests.admit(request, context, addresses: addresses)
        let body = try await request.decodeJSON(as: FlowBody.self, context: context)
        guard let type = body.type, !type.isEmpty else { throw AuthError.validationFailed("Verify requires a verification type") }
        let agent = request.headers[.userAgent]
        if let hash = body.tokenHash, !hash.isEmpty {
            switch try await flows.verify(link: hash, type: type, redirectTo: nil, userAgent: agent) {
            case .session(let tokens, let user, _): return try SessionResponse(tokens: tokens, user: user).response(from: request, context: context)
            case .authCode: throw AuthError.validationFailed("This link starts a PKCE flow: open it, then exchange its code")
            case .awaitingOtherAddress: return try Self.awaitingOtherAddress.response(from: request, context: context)
            }
        }
        guard let token = body.token, !token.isEmpty else { throw AuthError.validationFailed("Verify requires a token or a token hash") }
        guard token.utf8.count == 6, token.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { throw AuthError.otpExpired }
        switch try await flows.verify(code: token, email: try body.requireEmail(), type: type, userAgent: agent) {
        case .session(let tokens, let user): return try SessionResponse(tokens: tokens, user: user).response(from: request, context: context)
        case .awaitingOtherAddress: return try Self.awaitingOtherAddress.response(from: request, context: context)
        }
    }

    /// GoTrue's answer to the first side of a secure email change.
    struct Message: ResponseEncodable {
        var msg: String
        var code = 200
    }

    static let awaitingOtherAddress = Message(msg: "Confirmation link accepted. Please proceed to confirm link sent to the other email")

    /// The mailed link: 303 to the redirect, with the session in the fragment (implicit flow), an
    /// auth code in the query (PKCE), or GoTrue's error in the fragment.
    @Sendable func followLink(_ request: Request, context: AppRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let requested = query.get("redirect_to")
        do {
            try requests.admit(request, context, addresses: addresses)
            guard let token = query.get("token"), !token.isEmpty, let type = query.get("type") else { throw AuthError.otpExpired }
            switch try await flows.verify(link: token, type: type, redirectTo: requested, userAgent: request.headers[.userAgent]) {
            case .session(let tokens, _, let redirect):
                return Self.seeOther(
                    redirect,
                    fragment: [
                        ("access_token", tokens.accessToken), ("expires_at", "\(tokens.expiresAt)"), ("expires_in", "\(tokens.expiresIn)"),
                        ("refresh_token", tokens.refreshToken), ("token_type", "bearer"), ("type", type),
                    ]
                )
            case .awaitingOtherAddress(let redirect):
                return Self.seeOther(redirect, fragment: [("message", Self.awaitingOtherAddress.msg)])
            case .authCode(let code, let redirect):
                guard var components = URLComponents(string: redirect) else { return Self.seeOther(redirect, fragment: []) }
                let items = components.queryItems ?? []
                components.queryItems = items + [URLQueryItem(name: "code", value: code)]
                return Self.seeOther(components.string ?? redirect, fragment: [])
            }
        } catch let error as AuthError {
            return Self.seeOther(
                flows.redirects.resolve(requested),
                fragment: [
                    ("error", error == .otpExpired ? "access_denied" : "invalid_request"), ("error_code", error.code),
                    ("error_description", error == .otpExpired ? "Email link is invalid or has expired" : error.message),
                ]
            )
        }
    }

    @Sendable func resend(_ request: Request, context: AppRequestContext) async throws -> Nothing {
        try requests.admit(request, context, addresses: addresses)
        let body = try await request.decodeJSON(as: FlowBody.self, context: context)
        guard let type = body.type else { throw AuthError.validationFailed("Missing one of these types: signup, email_change") }
        try await flows.resend(type: type, email: try body.requireEmail(), secureEmailChange: secureEmailChange, redirectTo: redirectTo(request))
        return Nothing()
    }

    @Sendable func showSettings(_ request: Request, context: AppRequestContext) async throws -> AuthSettings {
        settings
    }

    private static func seeOther(_ target: String, fragment: [(String, String)]) -> Response {
        var location = target
        if !fragment.isEmpty {
            var components = URLComponents()
            components.queryItems = fragment.map { URLQueryItem(name: $0.0, value: $0.1) }
            location += "#" + (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        }
        var headers: HTTPFields = [:]
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: headers)
    }

    private func redirectTo(_ request: Request) -> String? {
        request.uri.queryParameters.get("redirect_to")
    }
}

/// `GET /settings`, in GoTrue's shape: which sign-in methods are on.
struct AuthSettings: ResponseEncodable, Equatable {
    struct External: Encodable, Equatable {
        var email = true
        var phone = false
        var apple = false
    }

    var external = External()
    var disableSignup = false
    var mailerAutoconfirm = true
    var phoneAutoconfirm = false
    var smsProvider = ""
    var samlEnabled = false

    private enum CodingKeys: String, CodingKey {
        case external
        case disableSignup = "disable_signup"
        case mailerAutoconfirm = "mailer_autoconfirm"
        case phoneAutoconfirm = "phone_autoconfirm"
        case smsProvider = "sms_provider"
        case samlEnabled = "saml_enabled"
    }
}
