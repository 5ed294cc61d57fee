import HTTPTypes

/// A secret shared between Splash services, presented in `X-Splash-Service-Token` by one service
/// calling another for work no user token covers (reporting a photo's use for a user, creating
/// accounts). Compared in constant time.
package struct ServiceToken: Sendable {
    package let secret: String

    package init(_ secret: String) {
        self.secret = secret
    }

    /// The token in `name` (or the file `<name>_FILE` names), `nil` when unset.
    /// - Throws: when it is shorter than 32 characters.
    package static func read(_ name: String, from reader: ConfigurationReader) throws(ConfigurationError) -> ServiceToken? {
        let expected = "a shared secret of at least 32 characters"
        guard let secret = try reader.optionalSecret(name, expected: expected) else { return nil }
        guard secret.utf8.count >= 32 else { throw ConfigurationError(variable: name, expected: expected, problem: .invalid(value: nil)) }
        return ServiceToken(secret)
    }

    /// Whether `presented` is this secret; the time taken depends on its length only.
    package func matches(_ presented: String) -> Bool {
        let left = Array(presented.utf8)
        let right = Array(secret.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}

extension HTTPField.Name {
    /// The service token a Splash service presents to another.
    package static let splashServiceToken = Self("X-Splash-Service-Token")!
    /// The user another service acts for, beside its service token.
    package static let splashUserID = Self("X-Splash-User-Id")!
}
