import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import Mail
import PostgresNIO
import ServiceKit

/// GoTrue's admin API, in part: `POST /admin/users` creates an account (an admin, or another
/// Splash service presenting `AUTH_SERVICE_TOKEN` in `X-Splash-Service-Token`: tracking seeds
/// its restaurants' owners this way); `GET /admin/users/{id}` reads one (an admin, or a service:
/// notify looks up where a receipt goes); `GET /admin/users` lists every user, newest first, a page
/// at a time (the console's Users page); `PUT /admin/users/{id}/role` sets a user's Splash role;
/// `GET /admin/mail?to=` lists the mail the local stack's catcher kept (no `SMTP_URL`); `POST /invite`
/// makes an account and mails it an invitation; `DELETE /admin/users/{id}` deletes an account
/// (an admin or a service), as `DELETE /user` does.
struct AdminController: Sendable {
    /// The catcher's mail, read from auth's mail outbox.
    struct CaughtMailReader: Sendable {
        let outbox: MailOutbox
        let client: PostgresClient
        let logger: Logger
    }

    let accounts: Accounts
    let authenticator: BearerAuthenticator
    let serviceToken: ServiceToken?
    let mail: CaughtMailReader
    let flows: CodeFlows
    let deletion: AccountDeletion

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.post("admin/users", use: create)
        router.get("admin/users", use: list)
        router.get("admin/users/:id", use: show)
        router.delete("admin/users/:id", use: delete)
        router.put("admin/users/:id/role", use: setRole)
        router.get("admin/mail", use: caughtMail)
        router.post("invite", use: invite)
    }

    private struct InviteBody: Decodable {
        var email: String?
        var data: [String: JSONValue]?
    }

    /// `POST /invite` (GoTrue's, admins only): the invited account, mailed a code and link.
    @Sendable func invite(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        try await accounts.requireAdmin(try await authenticator.authenticate(request))
        let body = try await request.decodeJSON(as: InviteBody.self, context: context)
        guard let email = body.email, !email.isEmpty else { throw AuthError.validationFailed("An email address is required") }
        let redirect = request.uri.queryParameters.get("redirect_to").map { String($0) }
        return UserResponse(user: try await flows.invite(email: email, metadata: body.data ?? [:], redirectTo: redirect))
    }

    /// `{"items":[…]}`, newest first: every caught mail, or those to `to`; admins only.
    @Sendable func caughtMail(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await accounts.requireAdmin(try await authenticator.authenticate(request))
        let limit = try Self.positive(request, "limit", default: 50, max: 500)
        let to = request.uri.queryParameters.get("to").map { String($0) }
        let items = try await mail.outbox.caught(to: to, limit: limit, client: mail.client, logger: mail.logger)
        let body = try EventJSON.encoder.encode(CaughtMailList(items: items))
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
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

    /// Lets an admin through, or a Splash service presenting the service token.
    /// - Throws: `AuthError.notAdmin` for a wrong service token or a user who is no admin.
    private func requireAdminOrService(_ request: Request) async throws {
        if let presented = request.headers[.splashServiceToken] {
            guard let serviceToken, serviceToken.matches(presented) else { throw AuthError.notAdmin("Invalid service token") }
        } else {
            try await accounts.requireAdmin(try await authenticator.authenticate(request))
        }
    }

    @Sendable func create(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        try await requireAdminOrService(request)
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
        let creation = Accounts.AdminCreation(
            id: id,
            email: email,
            password: body.password,
            confirmed: body.emailConfirm ?? false,
            metadata: body.userMetadata ?? [:],
            role: role
        )
        return UserResponse(user: try await accounts.create(creation))
    }

    /// GoTrue's answer: `{"users":[…],"aud":"authenticated"}`, with the total in `X-Total-Count`
    /// and the other pages in `Link`.
    private struct UserList: Encodable {
        var users: [UserResponse]
        var aud = "authenticated"
    }

    @Sendable func list(_ request: Request, context: AppRequestContext) async throws -> Response {
        let session = try await authenticator.authenticate(request)
        let page = try Self.positive(request, "page", default: 1, max: 1_000_000)
        let perPage = try Self.positive(request, "per_page", default: 50, max: 1_000)
        let (users, total) = try await accounts.users(page: page, perPage: perPage, by: session)
        var headers: HTTPFields = [.contentType: "application/json"]
        headers[.xTotalCount] = "\(total)"
        let lastPage = max(1, (total + perPage - 1) / perPage)
        var links = ["</admin/users?page=\(lastPage)&per_page=\(perPage)>; rel=\"last\""]
        if page < lastPage { links.insert("</admin/users?page=\(page + 1)&per_page=\(perPage)>; rel=\"next\"", at: 0) }
        headers[.link] = links.joined(separator: ", ")
        let body = try JSONEncoder().encode(UserList(users: users.map(UserResponse.init(user:))))
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A whole-number query parameter from 1 to `max`.
    private static func positive(_ request: Request, _ name: String, default value: Int, max: Int) throws -> Int {
        guard let text = request.uri.queryParameters.get(name) else { return value }
        guard let number = Int(text), (1...max).contains(number) else {
            throw AuthError.validationFailed("\(name) must be a whole number from 1 to \(max)")
        }
        return number
    }

    private struct RoleBody: Decodable {
        var role: String?
    }

    @Sendable func show(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        try await requireAdminOrService(request)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw AuthError.userNotFound }
        return UserResponse(user: try await accounts.user(id))
    }

    /// `DELETE /admin/users/{id}` (an admin, or a service): the deleted User, as it was.
    @Sendable func delete(_ request: Request, context: AppRequestContext) async throws -> UserResponse {
        try await requireAdminOrService(request)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw AuthError.userNotFound }
        return UserResponse(user: try await deletion.delete(id))
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

extension HTTPField.Name {
    static let xTotalCount = Self("X-Total-Count")!
    static let link = Self("Link")!
}
