import Crypto
import Foundation

/// Development secrets kept as files under `.data/secrets/` (mode 0600): generated once, read on
/// every start, never printed.
package struct SecretStore: Sendable {
    package let directory: URL

    package init(directory: URL) {
        self.directory = directory
    }

    /// The secret called `name`, generated (256 random bits, hex) on first use.
    package func secret(_ name: String) throws -> String {
        let file = directory.appendingPathComponent("\(name).secret")
        if let existing = try? String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), !existing.isEmpty {
            return existing
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let value = SymmetricKey(size: .bits256).withUnsafeBytes { bytes in
            bytes.map { String(format: "%02x", $0) }.joined()
        }
        guard FileManager.default.createFile(atPath: file.path, contents: Data(value.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
        return value
    }
}
