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
        try services().map(\.executable)
    }

    /// Each service `Package.swift` declares through its `service(…)` helper: its executable and
    /// its module, whose folder is `Services/<module>`.
    static func services() throws -> [(executable: String, module: String)] {
        let manifest = try text("Package.swift")
        let pattern = try NSRegularExpression(pattern: #"\bservice\(\s*"([a-z0-9-]+)",\s*module:\s*"([A-Za-z0-9]+)""#)
        return pattern.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)).compactMap { match in
            guard let executable = Range(match.range(at: 1), in: manifest), let module = Range(match.range(at: 2), in: manifest) else { return nil }
            return (String(manifest[executable]), String(manifest[module]))
        }
    }

    /// Folders that hold no file of the repository's own: build output, local state, git's.
    private static let ignoredFolders: Set<String> = [".git", ".data", ".swiftpm", "__pycache__", "node_modules"]

    /// Every file of the repository (build output and local state left out), by its path from
    /// the root, sorted.
    static func files() throws -> [String] {
        var paths: [String] = []
        let keys: [URLResourceKey] = [.isDirectoryKey]
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys) else { return [] }
        let prefix = root.standardizedFileURL.path + "/"
        for case let url as URL in walker {
            let name = url.lastPathComponent
            if try url.resourceValues(forKeys: Set(keys)).isDirectory == true {
                if ignoredFolders.contains(name) || name.hasPrefix(".build") { walker.skipDescendants() }
                continue
            }
            paths.append(String(url.standardizedFileURL.path.dropFirst(prefix.count)))
        }
        return paths.sorted()
    }

    /// `relative` (a link's path) resolved against the folder of `page`, as a path from the root;
    /// `nil` when it leads outside the repository.
    static func resolve(_ relative: String, from page: String) -> String? {
        var parts = relative.hasPrefix("/") ? [] : page.split(separator: "/").dropLast().map(String.init)
        for part in relative.split(separator: "/") {
            switch part {
            case ".": continue
            case "..":
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            default: parts.append(String(part))
            }
        }
        return parts.joined(separator: "/")
    }

    /// Whether a file or folder exists at `path` (from the root).
    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path)
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
