import Contracts
import Foundation
import Hummingbird
import ServiceKit

/// `PUT /admin/users/{id}/role`: an admin sets a user's Splash role.
struct AdminController: Sendable {
    let accounts: Accounts
    let authenticator: BearerAuthenticator

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.put("admin/users/:id/role", use: setRole)
    }

    private struct RoleBody: Decodable {
        var role: String?
    }

    @Sendable func setRole(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        let session = try await authenticator.authenticate(request)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw AuthError.validationFailed("the user id must be a UUID")
        }
        let body = try await request.decodeJSON(as: RoleBody.self, context: context)
        guard let role = body.role.flatMap(UserRole.init(rawValue:)) else {
            throw AuthError.validationFailed("role must be one of \(UserRole.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return UserResponse(user: try await accounts.setRole(role, of: id, by: session))
    }
}
