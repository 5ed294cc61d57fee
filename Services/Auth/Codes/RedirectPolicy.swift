import Foundation

/// Where a mailed link may send the browser: the site URL (`AUTH_SITE_URL`) and what lies under
/// its origin, or a URL matching one of `AUTH_REDIRECT_URLS` — GoTrue's globs, where `*` is any run
/// of characters within one part of a host or path (none of `. / ? # @ :`) and `**` any run at all
/// (`splashedit://**`, `http://localhost:3000/**`). Anything else falls back to the site URL:
/// never an open redirect (`https://*.splash.example/` does not let `https://evil?.splash.example/`
/// through).
struct RedirectPolicy: Sendable, Equatable {
    let siteURL: String
    let allowed: [String]

    /// `requested` when it is allowed, else the site URL.
    func resolve(_ requested: String?) -> String {
        guard let requested, !requested.isEmpty, requested.utf8.count <= 2_048 else { return siteURL }
        return isAllowed(requested) ? requested : siteURL
    }

    func isAllowed(_ candidate: String) -> Bool {
        guard let url = URL(string: candidate), url.scheme != nil else { return false }
        if let site = URL(string: siteURL), Self.origin(of: url) == Self.origin(of: site) { return true }
        return allowed.contains { Self.glob($0, matches: candidate) }
    }

    private static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        return "\(scheme)://\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    /// Whether `text` matches `pattern` in full.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        glob(Array(pattern.unicodeScalars)[...], Array(text.unicodeScalars)[...])
    }

    /// What a single `*` never crosses.
    private static let partBoundaries: Set<Unicode.Scalar> = [".", "/", "?", "#", "@", ":"]

    private static func glob(_ pattern: ArraySlice<Unicode.Scalar>, _ text: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let first = pattern.first else { return text.isEmpty }
        guard first == "*" else {
            guard let head = text.first, head == first else { return false }
            return glob(pattern.dropFirst(), text.dropFirst())
        }
        let anything = pattern.dropFirst().first == "*"
        let rest = pattern.dropFirst(anything ? 2 : 1)
        var remaining = text
        while true {
            if glob(rest, remaining) { return true }
            guard let next = remaining.first, anything || !Self.partBoundaries.contains(next) else { return false }
            remaining = remaining.dropFirst()
        }
    }
}
