import Foundation
import HTTPTypes
import Identity
import ServiceKit

extension HTTPFields {
    /// The token of an `Authorization: Bearer <token>` header, if there is one.
    package var bearerToken: String? {
        guard let header = self[.authorization], header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

/// The 401s of a request whose token is missing or not valid, with the `WWW-Authenticate`
/// challenge RFC 6750 describes.
package enum TokenProblem {
    package static let missing = Problem(
        status: .unauthorized, type: "unauthenticated", title: "Authentication required",
        detail: "Send an access token from auth as `Authorization: Bearer <token>`.",
        headers: [.wwwAuthenticate: "Bearer realm=\"splash\""]
    )

    package static func invalid(_ error: AccessTokenError) -> Problem {
        let reason = switch error {
        case .expired: "The access token has expired; refresh it."
        case .unknownKey: "The access token was not signed by a key auth publishes."
        case .unsupportedAlgorithm(let alg): "Access tokens are signed with ES256, not \(alg)."
        default: "The access token is not valid."
        }
        return Problem(
            status: .unauthorized, type: "invalid-token", title: "Invalid access token", detail: reason,
            headers: [.wwwAuthenticate: "Bearer realm=\"splash\", error=\"invalid_token\""]
        )
    }
}

extension KeySetCache {
    /// The claims of the request's bearer token.
    /// - Throws: `TokenProblem.missing` without one, `TokenProblem.invalid` when it does not verify.
    package func authenticate(_ headers: HTTPFields) async throws(Problem) -> AccessTokenClaims {
        guard let token = headers.bearerToken else { throw TokenProblem.missing }
        do {
            return try await verify(token)
        } catch {
            throw TokenProblem.invalid(error)
        }
    }
}

extension KeySetCache {
    /// The id of the user the request's bearer token was issued to.
    /// - Throws: `TokenProblem.missing` without a token, `TokenProblem.invalid` when it does not
    ///   verify or names no user.
    package func authenticatedUser(_ headers: HTTPFields) async throws(Problem) -> UUID {
        let claims = try await authenticate(headers)
        guard let user = claims.userID else { throw TokenProblem.invalid(.malformed) }
        return user
    }
}
