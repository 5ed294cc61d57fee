import Contracts
import Foundation
import HTTPTypes
import ServiceKit

/// Who is calling: the verified token's user and Splash role (`app_metadata.role`, which auth sets
/// and the client cannot), what every authenticated handler starts from.
package struct Caller: Sendable, Equatable {
    package var id: UUID
    package var role: UserRole

    package init(id: UUID, role: UserRole) {
        self.id = id
        self.role = role
    }

    package var isAdmin: Bool { role == .admin }

    /// - Throws: 403 `forbidden-role` unless the caller has one of `roles`.
    package func require(_ roles: UserRole..., to what: String) throws(Problem) {
        guard roles.contains(role) else {
            throw Problem(
                status: .forbidden,
                type: "forbidden-role",
                title: "Not allowed for this role",
                detail: "Only \(roles.map(\.rawValue).joined(separator: " or ")) accounts may \(what); this one is \(role.rawValue)."
            )
        }
    }
}

extension KeySetCache {
    /// The caller of a request with a verified bearer token; an unknown role counts as a
    /// customer's.
    /// - Throws: `TokenProblem.missing` without a token, `TokenProblem.refused` when it does not
    ///   verify or names no user.
    package func caller(_ headers: HTTPFields) async throws(Problem) -> Caller {
        let claims = try await authenticate(headers)
        guard let user = claims.userID else { throw TokenProblem.refused(.malformed) }
        return Caller(id: user, role: UserRole(rawValue: claims.splashRole) ?? .customer)
    }
}
