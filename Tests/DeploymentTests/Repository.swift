import Foundation

/// Files of this repository, read by the deployment checks.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The service executables `Package.swift` declares through its `service(…)` helper.
    static func serviceExecutables() throws -> [String] {
        let manifest = try text("Package.swift")
        let pattern = try NSRegularExpression(pattern: #"\bservice\(\s*"([a-z0-9-]+)""#)
        return pattern.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)).compactMap {
            Range($0.range(at: 1), in: manifest).map { String(manifest[$0]) }
        }
    }

    /// Every executable product `Package.swift` names outright (`.executable(name: "…"`).
    static func directlyDeclaredExecutables() throws -> [String] {
        let manifest = try text("Package.swift")
        let pattern = try NSRegularExpression(pattern: #"\.executable\(name:\s*"([^"]+)""#)
        return pattern.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)).compactMap {
            Range($0.range(at: 1), in: manifest).map { String(manifest[$0]) }
        }
    }
}
