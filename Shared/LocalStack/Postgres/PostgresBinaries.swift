import Foundation

/// Where the Postgres server programs (`initdb`, `postgres`) are.
package struct PostgresBinaries: Sendable, Equatable {
    package var directory: URL

    package var initdb: URL { directory.appendingPathComponent("initdb") }
    package var postgres: URL { directory.appendingPathComponent("postgres") }

    /// Finds them: `SPLASH_POSTGRES_BIN` if set, then the directory of `initdb` on `PATH`
    /// (following links), then the newest `/usr/lib/postgresql/<version>/bin`.
    /// - Throws: `LocalStackError.postgresNotFound` when none has both programs.
    package static func locate(environment: [String: String]) throws -> PostgresBinaries {
        var candidates: [URL] = []
        if let configured = environment["SPLASH_POSTGRES_BIN"], !configured.isEmpty {
            candidates.append(URL(fileURLWithPath: configured))
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let initdb = URL(fileURLWithPath: String(directory)).appendingPathComponent("initdb")
            if FileManager.default.isExecutableFile(atPath: initdb.path) {
                candidates.append(initdb.resolvingSymlinksInPath().deletingLastPathComponent())
            }
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.compactMap(Int.init).sorted(by: >) {
            candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin"))
        }
        for candidate in candidates {
            let binaries = PostgresBinaries(directory: candidate)
            if FileManager.default.isExecutableFile(atPath: binaries.initdb.path),
                FileManager.default.isExecutableFile(atPath: binaries.postgres.path)
            {
                return binaries
            }
        }
        throw LocalStackError.postgresNotFound
    }
}
