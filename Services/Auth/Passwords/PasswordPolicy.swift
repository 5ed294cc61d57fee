import Foundation

/// What a new password must be: 8–72 bytes by default (bcrypt reads 72 bytes at most), the
/// configured character classes, and not one of the passwords every cracking list starts with.
struct PasswordPolicy: Sendable, Equatable {
    /// Character classes a password must contain (`AUTH_PASSWORD_REQUIRED_CHARACTERS`).
    enum RequiredCharacters: String, Sendable, CaseIterable {
        case none
        case lettersDigits = "letters-digits"
        case lowerUpperDigits = "lower-upper-digits"
        case lowerUpperDigitsSymbols = "lower-upper-digits-symbols"

        func isSatisfied(by password: String) -> Bool {
            let lower = password.contains { $0.isLowercase }
            let upper = password.contains { $0.isUppercase }
            let digit = password.contains { $0.isNumber }
            let symbol = password.contains { !$0.isLetter && !$0.isNumber && !$0.isWhitespace }
            switch self {
            case .none: return true
            case .lettersDigits: return (lower || upper) && digit
            case .lowerUpperDigits: return lower && upper && digit
            case .lowerUpperDigitsSymbols: return lower && upper && digit && symbol
            }
        }
    }

    static let maximumBytes = 72

    var minimumLength = 8
    var requiredCharacters = RequiredCharacters.none

    /// - Throws: `AuthError.validationFailed` for an empty or over-long password,
    ///   `AuthError.weakPassword` with every reason that applies.
    func check(_ password: String) throws(AuthError) {
        guard !password.isEmpty else { throw .validationFailed("Password is required") }
        guard password.utf8.count <= Self.maximumBytes else {
            throw .validationFailed("Password cannot be longer than \(Self.maximumBytes) bytes")
        }
        var reasons: [AuthError.WeakPasswordReason] = []
        if password.count < minimumLength { reasons.append(.length) }
        if !requiredCharacters.isSatisfied(by: password) { reasons.append(.characters) }
        if CommonPasswords.contains(password) { reasons.append(.pwned) }
        guard reasons.isEmpty else { throw .weakPassword(reasons: reasons) }
    }
}

/// Passwords of at least eight characters that head every published breach list; refused as
/// `pwned` without asking a remote service.
enum CommonPasswords {
    static func contains(_ password: String) -> Bool {
        list.contains(password.lowercased())
    }

    private static let list: Set<String> = [
        "password", "password1", "password12", "password123", "password1234", "passw0rd", "p@ssw0rd", "p@ssword",
        "12345678", "123456789", "1234567890", "12341234", "87654321", "11111111", "00000000", "88888888",
        "11223344", "12344321", "123123123", "987654321", "1q2w3e4r", "1q2w3e4r5t", "1qaz2wsx", "q1w2e3r4",
        "qwertyui", "qwertyuiop", "qwerty123", "qwerty12", "asdfghjkl", "asdfasdf", "zxcvbnm1", "abcd1234",
        "abc12345", "abcdefgh", "iloveyou", "iloveyou1", "sunshine", "princess", "football", "baseball",
        "superman", "starwars", "whatever", "trustno1", "dragon12", "monkey12", "letmein1", "welcome1",
        "welcome123", "admin123", "administrator", "changeme", "computer", "internet", "michelle", "jennifer",
        "1234qwer", "qazwsxedc", "zaq12wsx", "passpass", "secret123", "master12", "shadow12", "football1",
    ]
}
