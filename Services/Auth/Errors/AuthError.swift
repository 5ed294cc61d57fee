import Hummingbird
import ServiceKit

/// The errors of the GoTrue protocol that auth answers with (Services/Auth/README.md), each with its
/// status and `error_code`. ServiceKit writes every problem under `/auth/v1` in GoTrue's shape, the
/// one the client asked for (`GoTrueError`).
enum AuthError: Error, Equatable {
    case validationFailed(String)
    case badJSON(String)
    case userAlreadyExists
    case emailExists
    case weakPassword(reasons: [WeakPasswordReason])
    case samePassword
    case usernameTaken
    case invalidCredentials
    case refreshTokenNotFound
    case refreshTokenAlreadyUsed
    case sessionNotFound
    case sessionExpired
    case noAuthorization
    case badJWT(String)
    case notAdmin(String)
    case userNotFound
    case overRequestRateLimit(retryAfterSeconds: Int)
    case overEmailSendRateLimit(retryAfterSeconds: Int)
    case otpExpired
    case otpDisabled
    case flowStateNotFound
    case badCodeVerifier
    case emailNotConfirmed
    case badIDToken(String)
    case providerDisabled
    case reauthenticationNeeded
    case reauthenticationNotValid
    case userOwnsRestaurants(Int)

    enum WeakPasswordReason: String, Codable, Equatable {
        case length, characters, pwned
    }

    var code: String {
        switch self {
        case .validationFailed: "validation_failed"
        case .badJSON: "bad_json"
        case .userAlreadyExists: "user_already_exists"
        case .emailExists: "email_exists"
        case .weakPassword: "weak_password"
        case .samePassword: "same_password"
        case .usernameTaken: "username_taken"
        case .invalidCredentials: "invalid_credentials"
        case .refreshTokenNotFound: "refresh_token_not_found"
        case .refreshTokenAlreadyUsed: "refresh_token_already_used"
        case .sessionNotFound: "session_not_found"
        case .sessionExpired: "session_expired"
        case .noAuthorization: "no_authorization"
        case .badJWT: "bad_jwt"
        case .notAdmin: "not_admin"
        case .userNotFound: "user_not_found"
        case .overRequestRateLimit: "over_request_rate_limit"
        case .overEmailSendRateLimit: "over_email_send_rate_limit"
        case .otpExpired: "otp_expired"
        case .otpDisabled: "otp_disabled"
        case .flowStateNotFound: "flow_state_not_found"
        case .badCodeVerifier: "bad_code_verifier"
        case .emailNotConfirmed: "email_not_confirmed"
        case .badIDToken: "bad_jwt"
        case .providerDisabled: "provider_disabled"
        case .reauthenticationNeeded: "reauthentication_needed"
        case .reauthenticationNotValid: "reauthentication_not_valid"
        case .userOwnsRestaurants: "user_owns_restaurants"
        }
    }

    var status: HTTPResponse.Status {
        switch self {
        case .validationFailed, .badJSON, .invalidCredentials, .refreshTokenNotFound, .refreshTokenAlreadyUsed, .badCodeVerifier, .emailNotConfirmed,
            .badIDToken, .providerDisabled, .reauthenticationNeeded, .reauthenticationNotValid:
            .badRequest
        case .userOwnsRestaurants:
            .conflict
        case .noAuthorization:
            .unauthorized
        case .badJWT, .sessionNotFound, .sessionExpired, .notAdmin, .otpExpired:
            .forbidden
        case .userNotFound, .flowStateNotFound:
            .notFound
        case .userAlreadyExists, .emailExists, .weakPassword, .samePassword, .usernameTaken, .otpDisabled:
            .unprocessableContent
        case .overRequestRateLimit, .overEmailSendRateLimit:
            .tooManyRequests
        }
    }

    var message: String {
        switch self {
        case .validationFailed(let message), .badJSON(let message), .badJWT(let message), .notAdmin(let message):
            message
        case .userAlreadyExists: "User already registered"
        case .emailExists: "A user with this email address has already been registered"
        case .weakPassword(let reasons):
            reasons.contains(.length)
                ? "Password should be at least the required length"
                : reasons.contains(.pwned)
                    ? "Password is known to be weak and easy to guess, please choose a different one."
                    : "Password should contain the required characters"
        case .samePassword: "New password should be different from the old password."
        case .usernameTaken: "Username is already taken"
        case .invalidCredentials: "Invalid login credentials"
        case .refreshTokenNotFound: "Invalid Refresh Token: Refresh Token Not Found"
        case .refreshTokenAlreadyUsed: "Invalid Refresh Token: Already Used"
        case .sessionNotFound: "Session from session_id claim in JWT does not exist"
        case .sessionExpired: "Session expired"
        case .noAuthorization: "This endpoint requires a Bearer token"
        case .userNotFound: "User not found"
        case .overRequestRateLimit: "Request rate limit reached"
        case .overEmailSendRateLimit(let seconds): "For security purposes, you can only request this after \(seconds) seconds."
        case .otpExpired: "Token has expired or is invalid"
        case .otpDisabled: "Signups not allowed for otp"
        case .flowStateNotFound: "invalid flow state, no valid flow state found"
        case .badCodeVerifier: "code challenge does not match previously saved code verifier"
        case .emailNotConfirmed: "Email not confirmed"
        case .badIDToken(let reason): "Bad ID token: \(reason)"
        case .providerDisabled: "Provider (issuer \"https://appleid.apple.com\") is not enabled"
        case .reauthenticationNeeded: "Deleting the account requires the password or a nonce from /reauthenticate"
        case .reauthenticationNotValid: "Requires reauthentication"
        case .userOwnsRestaurants(let count):
            "The account owns \(count == 1 ? "a restaurant" : "\(count) restaurants"): an admin must hand \(count == 1 ? "it" : "them") over before it can be deleted"
        }
    }
}

extension AuthError: ProblemConvertible {
    var problem: Problem {
        var headers: HTTPFields = [:]
        if case .overRequestRateLimit(let seconds) = self {
            headers[.retryAfter] = String(seconds)
        }
        if case .overEmailSendRateLimit(let seconds) = self {
            headers[.retryAfter] = String(seconds)
        }
        // The reasons of a weak password travel as field errors of /password; `GoTrueError`
        // writes them as `weak_password.reasons`.
        var errors: [FieldError] = []
        if case .weakPassword(let reasons) = self {
            errors = reasons.map { FieldError(.body(pointer: "/password"), $0.rawValue) }
        }
        return Problem(status: status, type: code, title: message, detail: message, errors: errors, headers: headers)
    }
}
