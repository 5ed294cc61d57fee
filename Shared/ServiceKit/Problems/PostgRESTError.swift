import Foundation

/// An error body as PostgREST writes it: `{"code","details","hint","message"}` (supabase clients
/// require `message`). The data API's own errors are written so; so is any problem answered under
/// `/rest/v1` before a request reaches it (a body too large, a token refused at the gateway, an
/// upstream down), so a client there always reads one shape.
package struct PostgRESTError: Encodable, Sendable {
    package var code: String
    package var details: String?
    package var hint: String?
    package var message: String

    package init(code: String, message: String, details: String? = nil, hint: String? = nil) {
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
    }

    /// A problem raised outside the data API's handlers at `path`, with a code for its status.
    /// PostgREST's `hint` is advice for a person, never a problem's type URI: none is given. A 404
    /// names what was not found as PostgREST does: the table (`PGRST205`) or the function
    /// (`PGRST202`) the path asked for.
    package init(_ problem: Problem, path: String = "") {
        let details = problem.errors.isEmpty ? nil : problem.errors.map(\.detail).joined(separator: "; ")
        if problem.status.code == 404, let name = Self.resource(in: path) {
            if name.hasPrefix("rpc/") {
                let function = name.dropFirst(4)
                self.init(code: "PGRST202", message: "Could not find the function public.\(function) in the schema cache", details: details)
            } else {
                self.init(code: "PGRST205", message: "Could not find the table 'public.\(name)' in the schema cache", details: details)
            }
            return
        }
        let code =
            switch problem.status.code {
            case 401: "PGRST301"
            case 404: "PGRST205"
            case 413: "PGRST413"
            case 429: "PGRST429"
            default: "PGRST\(problem.status.code)"
            }
        self.init(code: code, message: problem.detail ?? problem.title, details: details)
    }

    /// The table (`likes`) or function (`rpc/advance_order`) a data API path names, if any.
    static func resource(in path: String) -> String? {
        guard covers(path) else { return nil }
        let name = path.dropFirst("/rest/v1".count).split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        let trimmed = name.split(separator: "/").joined(separator: "/")
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Whether `path` lies under the data API.
    package static func covers(_ path: String) -> Bool {
        path == "/rest/v1" || path.hasPrefix("/rest/v1/")
    }

    private enum CodingKeys: String, CodingKey { case code, details, hint, message }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        // Always present, null when empty, as PostgREST writes them.
        try container.encode(details, forKey: .details)
        try container.encode(hint, forKey: .hint)
        try container.encode(message, forKey: .message)
    }

    package var json: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data()
    }
}
