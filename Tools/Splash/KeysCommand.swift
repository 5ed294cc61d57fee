import ArgumentParser
import Foundation
import Identity

/// Where `splash up` keeps development keys, under its secrets folder.
enum DevelopmentKeys {
    static let authSigningKeyFile = "auth-jwt-key.pem"
}

/// `splash keys generate`: a new ES256 signing key for auth (`AUTH_JWT_KEY` / `AUTH_JWT_KEY_FILE`).
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Signing keys for auth's access tokens.",
        subcommands: [Generate.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate an EC P-256 (ES256) private key in PEM.",
            discussion: """
                Writes the key to --output (mode 0600, never overwriting a file) or to standard output, \
                and its kid (the RFC 7638 thumbprint auth publishes in its JWKS) to standard error. \
                To rotate: configure the new key as AUTH_JWT_KEY_FILE and the old one as \
                AUTH_JWT_PREVIOUS_KEY_FILE until the old tokens have expired.
                """
        )

        @Option(name: .shortAndLong, help: "File to write the key to (default: standard output).")
        var output: String?

        func run() throws {
            let key = SigningKey.generate()
            if let output {
                guard !FileManager.default.fileExists(atPath: output) else {
                    throw ValidationError("\(output) exists; choose another file")
                }
                guard FileManager.default.createFile(atPath: output, contents: Data(key.pem.utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw ValidationError("cannot write \(output)")
                }
            } else {
                print(key.pem)
            }
            FileHandle.standardError.write(Data("kid: \(key.id)\n".utf8))
        }
    }
}
