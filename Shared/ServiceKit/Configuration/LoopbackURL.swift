import Foundation

extension URL {
    /// Whether the URL's host is this machine (`localhost`, `127.x.x.x`, `::1`): where a plain
    /// connection is allowed that must be encrypted anywhere else (SMTP without STARTTLS, Apple's
    /// keys over `http://` in tests).
    package var pointsToLoopback: Bool {
        let host = (host ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
