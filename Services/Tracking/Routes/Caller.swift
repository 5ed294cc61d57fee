import Contracts
import Foundation
import HTTPTypes
import KeySetClient
import ServiceKit

/// Who is calling: the verified token's user and Splash role (`app_metadata.role`, set by auth;
/// never read from the request).
struct Caller: Sendable, Equatable {
    var id: UUID
    var role: UserRole

    var actor: OrderActor {
        let acting: OrderActor.Role =
            switch role {
            case .customer: .customer
            case .restaurant: .restaurant
            case .driver: .driver
            case .admin: .admin
            }
        return OrderActor(userId: id, role: acting)
    }

    var isAdmin: Bool { role == .admin }

    /// The settings row-level security reads.
    var settings: [(name: String, value: String)] {
        [("app.user_id", id.uuidString.lowercased()), ("app.role", role.rawValue)]
    }

    /// - Throws: 403 `forbidden-role` unless the caller has one of `roles`.
    func require(_ roles: UserRole..., to what: String) throws(Problem) {
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
    /// The caller of a request with a verified bearer token; an unknown role counts as a customer's.
    func caller(_ headers: HTTPFields) async throws(Problem) -> Caller {
        let claims = try await authenticate(headers)
        guard let user = claims.userID else { throw TokenProblem.refused(.malformed) }
        return Caller(id: user, role: UserRole(rawValue: claims.splashRole) ?? .customer)
    }
}
