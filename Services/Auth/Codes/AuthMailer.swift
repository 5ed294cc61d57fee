import Foundation
import Mail
import Mustache

/// Auth's mails, from Mustache templates: for each kind a subject, a plain-text and an HTML part,
/// with `{{code}}`, `{{link}}`, `{{email}}`, `{{new_email}}`, `{{site_url}}` and `{{valid_for}}`.
/// The built-in templates are `Services/Auth/MailTemplates/<kind>.<subject|text|html>.mustache`;
/// a file of the same name in `AUTH_MAIL_TEMPLATES_DIR` replaces one. In the plain-text part the
/// code stands alone on its line (a mail app offers to copy it) and the link is written unescaped.
struct AuthMailer: Sendable {
    /// What a mail tells, by the kind of code it carries.
    enum Kind: String, Sendable, CaseIterable {
        case signup, magiclink, recovery, invite
        /// A changed address: the code to the new address, and (secure change) to the current one.
        case emailChange = "email_change"
        case emailChangeCurrent = "email_change_current"
        /// The nonce `GET /reauthenticate` mails: spent by `DELETE /user` (and a password change
        /// under `AUTH_SECURE_PASSWORD_CHANGE`), never by `/verify`.
        case reauthentication

        /// The `type` a link carries and `/verify` takes: both sides of a change are `email_change`.
        var verifyType: String { self == .emailChangeCurrent ? Kind.emailChange.rawValue : rawValue }
    }

    private let templates: [String: MustacheTemplate]
    let publicURL: String
    let siteURL: String
    let validFor: String

    /// - Throws: when a template is missing or does not parse (the service then does not start).
    init(overrides: String?, publicURL: String, siteURL: String, lifetime: Duration) throws {
        guard let builtIn = Bundle.module.url(forResource: "MailTemplates", withExtension: nil) else {
            throw MailTemplateError(file: "MailTemplates", problem: "the built-in templates are missing")
        }
        var templates: [String: MustacheTemplate] = [:]
        for kind in Kind.allCases {
            for part in ["subject", "text", "html"] {
                let name = "\(kind.rawValue).\(part)"
                let override = overrides.map { URL(fileURLWithPath: $0).appendingPathComponent("\(name).mustache") }
                let file =
                    override.flatMap { FileManager.default.isReadableFile(atPath: $0.path) ? $0 : nil }
                    ?? builtIn.appendingPathComponent("\(name).mustache")
                do {
                    templates[name] = try MustacheTemplate(string: String(contentsOf: file, encoding: .utf8))
                } catch {
                    throw MailTemplateError(file: file.path, problem: "\(error)")
                }
            }
        }
        self.templates = templates
        self.publicURL = publicURL
        self.siteURL = siteURL
        let seconds = Int(lifetime.components.seconds)
        validFor = seconds % 3_600 == 0 ? (seconds == 3_600 ? "one hour" : "\(seconds / 3_600) hours") : "\(max(1, seconds / 60)) minutes"
    }

    /// The link a mail carries: `{AUTH_PUBLIC_URL}/auth/v1/verify?token=…&type=…&redirect_to=…`.
    func link(token: String, kind: Kind, redirectTo: String) -> String {
        var components = URLComponents(string: "\(publicURL)/auth/v1/verify")
        components?.queryItems = [
            URLQueryItem(name: "token", value: token), URLQueryItem(name: "type", value: kind.verifyType),
            URLQueryItem(name: "redirect_to", value: redirectTo),
        ]
        // `+` is a space to many decoders: written escaped, so a redirect keeps it.
        return (components?.string ?? "").replacingOccurrences(of: "+", with: "%2B")
    }

    /// The mail of `kind` to `address`; `email` is the account's address when it is not the
    /// recipient (a change's mail to its new address).
    func mail(_ kind: Kind, id: UUID, to address: String, code: String, link: String, email: String? = nil, newEmail: String? = nil) -> OutgoingMail {
        let values: [String: String] = [
            "code": code, "link": link, "email": email ?? address, "new_email": newEmail ?? "", "site_url": siteURL, "valid_for": validFor,
        ]
        func render(_ part: String) -> String { templates["\(kind.rawValue).\(part)"]?.render(values) ?? "" }
        let subject = render("subject").trimmingCharacters(in: .whitespacesAndNewlines)
        return OutgoingMail(id: id, kind: kind.rawValue, recipient: .address(address), subject: subject, text: render("text"), html: render("html"))
    }
}

struct MailTemplateError: Error, CustomStringConvertible {
    var file: String
    var problem: String
    var description: String { "mail template \(file): \(problem)" }
}
