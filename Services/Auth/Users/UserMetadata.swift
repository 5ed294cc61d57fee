import Foundation
import Identity

/// The rules for `user_metadata`: the free-form profile a client writes, with the two keys Splash
/// gives a meaning — `username` and `avatar_url`.
enum UserMetadata {
    static let usernameKey = "username"
    static let avatarURLKey = "avatar_url"
    /// The largest `user_metadata` document, encoded.
    static let maximumBytes = 16 * 1024

    /// `current` with `changes` merged in: a key set to `null` is removed.
    /// - Throws: `AuthError.validationFailed` when the result breaks a rule.
    static func merge(_ changes: [String: JSONValue], into current: [String: JSONValue]) throws(AuthError) -> [String: JSONValue] {
        var merged = current
        for (key, value) in changes {
            if value == .null {
                merged[key] = nil
            } else {
                merged[key] = value
            }
        }
        try validate(merged)
        return merged
    }

    static func validate(_ metadata: [String: JSONValue]) throws(AuthError) {
        if let username = metadata[usernameKey] {
            guard let text = username.stringValue, Username.isValid(text) else {
                throw .validationFailed("username must be 3–30 characters of a-z, 0-9, _ and .")
            }
        }
        if let avatar = metadata[avatarURLKey] {
            guard let text = avatar.stringValue, text.utf8.count <= 2_048,
                let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil
            else {
                throw .validationFailed("avatar_url must be an http or https URL of at most 2048 characters")
            }
        }
        let encoded = (try? JSONEncoder().encode(metadata))?.count ?? Int.max
        guard encoded <= maximumBytes else {
            throw .validationFailed("user_metadata cannot be larger than \(maximumBytes) bytes")
        }
    }
}

/// A profile's username: 3–30 of `a-z 0-9 _ .`, unique regardless of case (letters are accepted
/// in either case and compared case-insensitively).
enum Username {
    static func isValid(_ text: String) -> Bool {
        (3...30).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default:
                    false
                }
            }
    }
}

/// Email addresses as sign-up and sign-in accept them.
enum EmailAddress {
    static let maximumBytes = 254

    /// `text` trimmed, when it looks like a deliverable address: one `@`, a non-empty local part, a
    /// domain with a dot, no spaces or control characters, at most 254 bytes.
    static func normalized(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard (3...maximumBytes).contains(trimmed.utf8.count) else { return nil }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64 else { return nil }
        let domain = parts[1]
        guard domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix("."), !domain.contains("..") else { return nil }
        guard trimmed.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !"()<>[]\\,;:\"".unicodeScalars.contains($0) })
        else { return nil }
        return trimmed
    }
}
