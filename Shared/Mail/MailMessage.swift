import Foundation

/// One mail to one address, with a plain-text and an HTML part (a client shows the one it can).
package struct MailMessage: Sendable, Equatable, Codable {
    package var to: String
    package var subject: String
    package var text: String
    package var html: String

    package init(to: String, subject: String, text: String, html: String) {
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
    }

    /// The message as it goes over SMTP (RFC 5322, MIME `multipart/alternative`, both parts UTF-8
    /// in base64, a non-ASCII subject as an RFC 2047 encoded word), CRLF line ends.
    /// - Throws: `MailError.invalidAddress` for an address that is not one, or holds a line break.
    package func rendered(from: MailSender, id: UUID, date: Date) throws(MailError) -> String {
        guard MailMessage.isAddress(to) else { throw .invalidAddress(to) }
        let boundary = "splash-\(id.uuidString.lowercased())"
        var lines = [
            "From: \(from.header)",
            "To: \(to)",
            "Subject: \(MailMessage.encodedWord(subject))",
            "Date: \(MailMessage.dateHeader(date))",
            "Message-ID: <\(id.uuidString.lowercased())@\(from.domain)>",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "",
        ]
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            lines += [
                "--\(boundary)",
                "Content-Type: \(type); charset=utf-8",
                "Content-Transfer-Encoding: base64",
                "",
            ]
            lines += MailMessage.base64Lines(Data(body.utf8))
        }
        lines += ["--\(boundary)--", ""]
        return lines.joined(separator: "\r\n")
    }

    /// An address as SMTP takes it: `local@domain`, printable ASCII without spaces, angle brackets
    /// or line breaks, at most 254 characters.
    package static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard text.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasSuffix(".") else { return false }
        return text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "<") && $0 != UInt8(ascii: ">") }
    }

    /// `text` as a header value: itself when it is printable ASCII, else an RFC 2047 encoded word.
    static func encodedWord(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        if flat.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return flat }
        return "=?UTF-8?B?\(Data(flat.utf8).base64EncodedString())?="
    }

    static func base64Lines(_ data: Data) -> [String] {
        let encoded = data.base64EncodedString()
        return stride(from: 0, to: encoded.count, by: 76).map { start in
            let from = encoded.index(encoded.startIndex, offsetBy: start)
            return String(encoded[from..<(encoded.index(from, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex)])
        }
    }

    static func dateHeader(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}

/// Who mail is from (`SMTP_FROM`): `Splash <no-reply@example.com>` or a bare address.
package struct MailSender: Sendable, Equatable {
    package var name: String?
    package var address: String

    /// - Returns: `nil` when `text` is no `Name <address>` or address.
    package init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let open = trimmed.lastIndex(of: "<"), trimmed.hasSuffix(">") {
            let name = trimmed[..<open].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            let address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
            guard MailMessage.isAddress(address), !name.contains("\r"), !name.contains("\n") else { return nil }
            self.name = name.isEmpty ? nil : name
            self.address = address
        } else {
            guard MailMessage.isAddress(trimmed) else { return nil }
            self.address = trimmed
        }
    }

    var header: String {
        guard let name else { return address }
        let encoded = MailMessage.encodedWord(name)
        return encoded == name ? "\"\(name.replacingOccurrences(of: "\"", with: ""))\" <\(address)>" : "\(encoded) <\(address)>"
    }

    var domain: String { String(address.split(separator: "@").last ?? "localhost") }
}

/// Why a mail could not be made or sent.
package enum MailError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidAddress(String)
    /// The SMTP exchange failed: libcurl's code and words, and the server's last reply code.
    case delivery(code: Int, message: String, reply: Int)

    package var description: String {
        switch self {
        case .invalidAddress(let address): "not a mail address: \(address.debugDescription)"
        case .delivery(let code, let message, let reply): "SMTP failed (curl \(code), reply \(reply)): \(message)"
        }
    }

    /// Whether trying again later may succeed: not for an address the server refused for good
    /// (550–553: no such mailbox, not allowed, bad address). A refused login or a missing STARTTLS
    /// is the deployment's to fix, and the mail waits for it.
    package var isTransient: Bool {
        switch self {
        case .invalidAddress: false
        case .delivery(_, _, let reply): !(550...553).contains(reply)
        }
    }
}
