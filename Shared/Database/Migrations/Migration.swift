import Crypto
import Foundation
import ServiceKit

/// One versioned SQL migration: the file `Migrations/0003_collections.sql` is version 3, named
/// `collections`.
package struct Migration: Sendable, Equatable {
    package var version: Int
    package var name: String
    package var sql: String
    /// SHA-256 of the SQL (with line endings normalised to `\n`), hex-encoded.
    package var checksum: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql.replacingOccurrences(of: "\r\n", with: "\n")
        self.checksum = SHA256.hash(data: Data(self.sql.utf8)).hexEncoded
    }

    /// The file name the migration came from, e.g. `0003_collections.sql`.
    package var fileName: String {
        String(format: "%04d_%@.sql", version, name)
    }

    /// Reads every `NNNN_name.sql` file of `directory`, ordered by version.
    /// - Throws: `MigrationError.invalidFileName` for a `.sql` file not named that way,
    ///   `.duplicateVersion` when two files share a version.
    package static func load(directory: URL) throws -> [Migration] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
        var migrations: [Migration] = []
        for file in files {
            let fileName = file.lastPathComponent
            let stem = fileName.dropLast(4)
            guard let separator = stem.firstIndex(of: "_"),
                let version = Int(stem[..<separator]), version > 0,
                stem[..<separator].allSatisfy(\.isNumber)
            else { throw MigrationError.invalidFileName(fileName) }
            let sql = try String(contentsOf: file, encoding: .utf8)
            migrations.append(Migration(version: version, name: String(stem[stem.index(after: separator)...]), sql: sql))
        }
        migrations.sort { $0.version < $1.version }
        for (earlier, later) in zip(migrations, migrations.dropFirst()) where earlier.version == later.version {
            throw MigrationError.duplicateVersion(earlier.version, earlier.fileName, later.fileName)
        }
        return migrations
    }

    /// Reads the migrations a target ships as resources: `resources: [.copy("Migrations")]` and
    /// `Migration.load(bundle: .module)`.
    package static func load(bundle: Bundle, subdirectory: String = "Migrations") throws -> [Migration] {
        guard let directory = bundle.resourceURL?.appendingPathComponent(subdirectory, isDirectory: true) else {
            throw MigrationError.missingDirectory(subdirectory)
        }
        return try load(directory: directory)
    }
}
