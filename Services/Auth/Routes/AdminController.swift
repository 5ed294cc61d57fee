import Contracts
import Foundation
import Hummingbird
import Identity
import ServiceKit

/// GoTrue's admin API, in part: `POST /admin/users` creates an account (an admin, or another
/// Splash service presenting `AUTH_SERVICE_TOKEN` in `X-Splash-Service-Token`: tracking seeds
/// its restaurants' owners this way); `PUT /admin/users/{id}/role` sets a user's Splash role.
struct AdminController: Sendable {
    let accounts: Accounts
    let authenticator: BearerAuthenticator
    let serviceToken: ServiceToken?

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.post("admin/users", use: create)
        router.put("admin/users/:id/role", use: setRole)
    }

    private struct CreateBody: Decodable {
        var id: String?
        var email: String?
        var password: String?
        var emailConfirm: Bool?
        var userMetadata: [String: JSONValue]?
        var appMetadata: [String: JSONValue]?

        enum CodingKeys: String, CodingKey {
            case id, email, password
            case emailConfirm = "email_confirm"
            case userMetadata = "user_metadata"
            case appMetadata = "app_metadata"
        }
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        if let presented = request.headers[.splashServiceToken] {
            guard let serviceToken, serviceToken.matches(presented) else { throw AuthError.notAdmin("Invalid service token") }
        } else {
            try await accounts.requireAdmin(try await authenticator.authenticate(request))
        }
        let body = try await request.decodeJSON(as: CreateBody.self, context: context)
        guard let email = body.email else { throw AuthError.validationFailed("An email address is required") }
        var id: UUID?
        if let text = body.id {
            guard let parsed = UUID(uuidString: text) else { throw AuthError.validationFailed("id must be a UUID") }
            id = parsed
        }
        var role: UserRole?
        switch body.appMetadata?["role"] {
        case nil, .null?: role = nil
        case .string(let name)?:
            guard let known = UserRole(rawValue: name) else {
                throw AuthError.validationFailed("app_metadata.role must be one of \(UserRole.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            role = known
        default: throw AuthError.validationFailed("app_metadata.role must be a string")
        }
        let creation = Accounts.AdminCreation(id: id, email: email, password: body.password, confirmed: body.emailConfirm ?? false,
                                              metadata: body.userMetadata ?? [:], role: role)
        return UserResponse(user: try await accounts.create(creation))
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
