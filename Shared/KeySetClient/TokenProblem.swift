import Foundation
import HTTPTypes
import Identity
import ServiceKit

/// The answers to a request whose token is missing or not valid: 401 with the
/// `WWW-Authenticate` challenge RFC 6750 describes. A token that cannot be checked because auth's
/// keys cannot be had is not the client's fault: 503 with `Retry-After`, so that no client signs
/// its user out over it.
package enum TokenProblem {
    package static let missing = Problem(
        status: .unauthorized,
        type: "unauthenticated",
        title: "Authentication required",
        detail: "Send an access token from auth as `Authorization: Bearer <token>`.",
        headers: [.wwwAuthenticate: "Bearer realm=\"splash\""]
    )

    package static let keysUnavailable = Problem(
        status: .serviceUnavailable,
        type: "token-check-unavailable",
        title: "Access tokens cannot be checked just now",
        detail: "auth's signing keys could not be fetched; retry shortly.",
        headers: [.retryAfter: "2"]
    )

    package static func refused(_ error: AccessTokenError) -> Problem {
        if error == .keysUnavailable { return keysUnavailable }
        let reason =
            switch error {
            case .expired: "The access token has expired; refresh it."
            case .userDeleted: "The account this access token was issued to has been deleted."
            case .unknownKey: "The access token was not signed by a key auth publishes."
            case .unsupportedAlgorithm(let alg): "Access tokens are signed with ES256, not \(alg)."
            default: "The access token is not valid."
            }
        return Problem(
            status: .unauthorized,
            type: "invalid-token",
            title: "Invalid access token",
            detail: reason,
            headers: [.wwwAuthenticate: "Bearer realm=\"splash\", error=\"invalid_token\""]
        )
    }
}

extension KeySetCache {
    /// The claims of the request's bearer token.
    /// - Throws: `TokenProblem.missing` without one, `TokenProblem.refused` when it does not verify
    ///   (or cannot be checked).
    package func authenticate(_ headers: HTTPFields) async throws(Problem) -> AccessTokenClaims {
        guard let token = headers.bearerToken else { throw TokenProblem.missing }
        do {
            return try await verify(token)
        } catch {
            throw TokenProblem.refused(error)
        }
    }
}
