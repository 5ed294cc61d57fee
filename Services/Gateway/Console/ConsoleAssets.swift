import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The console's files, read once from the package's resources (`Console/Assets`): no build step,
/// no CDN. Pages are one shell whose script draws the page it names.
struct ConsoleAssets: Sendable {
    struct MissingAsset: Error, CustomStringConvertible {
        var name: String
        var description: String { "the console's \(name) is missing from this build's resources" }
    }

    private let shellTemplate: String
    private let loginTemplate: String
    private let style: String
    private let files: [String: (type: String, body: ByteBuffer)]

    init() throws {
        guard let folder = Bundle.module.url(forResource: "Assets", withExtension: nil) else { throw MissingAsset(name: "Assets folder") }
        func read(_ name: String) throws -> String {
            guard let text = try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8) else { throw MissingAsset(name: name) }
            return text
        }
        shellTemplate = try read("shell.html")
        loginTemplate = try read("login.html")
        style = try read("console.css")
        files = [
            "console.css": ("text/css; charset=utf-8", ByteBuffer(string: style)),
            "console.js": ("text/javascript; charset=utf-8", ByteBuffer(string: try read("console.js"))),
        ]
    }

    /// Scripts and styles from the console's own origin only; no frames, no plug-ins.
    private static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff",
        .referrerPolicy: "no-referrer",
        .cacheControl: "no-store",
    ]

    func asset(named name: String) -> Response? {
        guard let file = files[name] else { return nil }
        var headers = Self.securityHeaders
        headers[.contentType] = file.type
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: file.body))
    }

    /// The page shell for `page` (one of `ConsoleController.pages`).
    func shell(page: String) -> Response {
        html(shellTemplate.replacingOccurrences(of: "{{page}}", with: page), status: .ok)
    }

    /// The sign-in form, with `message` (escaped) above it when there is one.
    func loginPage(message: String?, status: HTTPResponse.Status) -> Response {
        let notice = message.map { #"<p class="notice" role="alert">\#(Self.escape($0))</p>"# } ?? ""
        return html(
            loginTemplate.replacingOccurrences(of: "{{style}}", with: style).replacingOccurrences(of: "{{message}}", with: notice),
            status: status
        )
    }

    private func html(_ text: String, status: HTTPResponse.Status) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
