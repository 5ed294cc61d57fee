import Crypto
import Foundation
import ServiceKit

/// Development secrets kept as files under `.data/secrets/` (mode 0600): generated once, read on
/// every start, never printed.
package struct SecretStore: Sendable {
    package let directory: URL

    package init(directory: URL) {
        self.directory = directory
    }

    /// The secret called `name`, generated (256 random bits, hex) on first use.
    package func secret(_ name: String) throws -> String {
        try String(contentsOf: secretFile(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The file holding the secret called `name` (for a service's `…_FILE` variable), generated
    /// on first use like `secret(_:)`.
    package func secretFile(_ name: String) throws -> URL {
        try file("\(name).secret") {
            SymmetricKey(size: .bits256).withUnsafeBytes { $0.hexEncoded }
        }
    }

    /// The file called `name` in the store, written with what `generate` returns when it is missing
    /// or empty (a development signing key, say). Services read it through a `…_FILE` variable.
    package func file(_ name: String, generate: () throws -> String) throws -> URL {
        let file = directory.appendingPathComponent(name)
        if let existing = try? String(contentsOf: file, encoding: .utf8), !existing.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return file
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard FileManager.default.createFile(atPath: file.path, contents: Data(try generate().utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
        return file
    }
}
