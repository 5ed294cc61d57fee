import Foundation
import HTTPTypes
import Identity
import KeySetClient
import ServiceKit

/// Who may use the console: admins, by an access token in the `splash_console` cookie (set by
/// `/console/login`) or an `Authorization: Bearer` header.
struct ConsoleAccess: Sendable {
    enum Decision {
        case admin(Viewer, token: String)
        /// No token, or one that does not verify (expired, forged): sign in.
        case signedOut
        /// A valid token of someone who is not an admin.
        case forbidden
        /// auth's keys have never been fetched: nothing can be decided.
        case keysUnavailable
    }

    static let cookieName = "splash_console"

    let keys: KeySetCache

    func decide(_ headers: HTTPFields) async -> Decision {
        guard let token = headers.bearerToken ?? Self.cookie(in: headers) else { return .signedOut }
        return await decide(token: token)
    }

    func decide(token: String) async -> Decision {
        do {
            let viewer = Viewer(try await keys.verify(token))
            return viewer.isAdmin ? .admin(viewer, token: token) : .forbidden
        } catch .keysUnavailable {
            return .keysUnavailable
        } catch {
            return .signedOut
        }
    }

    /// The admin behind an API call; a problem otherwise (401, 403 or 503).
    func requireAdmin(_ headers: HTTPFields) async throws(Problem) -> (viewer: Viewer, token: String) {
        try await requireAdmin(headers, signedOut: Self.signInProblem)
    }

    /// The admin behind a page; a browser without a session is sent to sign in.
    func requireAdminPage(_ headers: HTTPFields) async throws(Problem) -> (viewer: Viewer, token: String) {
        try await requireAdmin(headers, signedOut: Self.signInRedirect)
    }

    private func requireAdmin(_ headers: HTTPFields, signedOut: Problem) async throws(Problem) -> (viewer: Viewer, token: String) {
        switch await decide(headers) {
        case .admin(let viewer, let token): return (viewer, token)
        case .signedOut: throw signedOut
        case .forbidden: throw Self.forbiddenProblem
        case .keysUnavailable: throw Self.keysUnavailableProblem
        }
    }

    static let signInProblem = Problem(
        status: .unauthorized,
        type: "unauthenticated",
        title: "Sign in",
        detail: "The console is for admins: sign in at /console/login, or send an admin's access token.",
        headers: [.wwwAuthenticate: "Bearer"]
    )
    /// A problem like any other, whose Location a browser follows.
    static let signInRedirect = Problem(
        status: .seeOther,
        type: "sign-in",
        detail: "Sign in at /console/login.",
        headers: [.location: "/console/login"]
    )
    static let forbiddenProblem = Problem(status: .forbidden, type: "admins-only", title: "Admins only", detail: "The console is for admins.")
    static let keysUnavailableProblem = Problem(
        status: .serviceUnavailable,
        type: "token-check-unavailable",
        title: "Tokens cannot be checked",
        detail: "auth's keys have not been fetched yet; retry shortly.",
        headers: [.retryAfter: "5"]
    )

    /// The value of the console's cookie in a `Cookie` header.
    static func cookie(in headers: HTTPFields) -> String? {
        for header in headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == cookieName {
                    let value = parts[1].trimmingCharacters(in: .whitespaces)
                    return value.isEmpty ? nil : value
                }
            }
        }
        return nil
    }

    /// `Set-Cookie` for a session of `lifetime` seconds (0 clears it). HttpOnly (scripts never see
    /// the token), SameSite=Strict (no other site's page sends it), for `/console` only; `Secure`
    /// when the client came over HTTPS.
    static func setCookie(_ token: String, lifetime: Int, secure: Bool) -> String {
        "\(cookieName)=\(token); Path=/console; Max-Age=\(lifetime); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }
}
