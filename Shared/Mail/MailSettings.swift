import Foundation
import ServiceKit

/// The mail settings every service that mails reads alike: `SMTP_URL` (unset: the local stack's
/// catcher), `SMTP_FROM`, `SMTP_CA_FILE` (Services/Notify/README.md and docs/configuration.md
/// describe them).
package struct MailSettings: Sendable {
    /// `nil`: mail is caught, not sent.
    package var endpoint: SMTPEndpoint?
    package var sender: MailSender

    package init(from reader: ConfigurationReader) throws(ConfigurationError) {
        let url = try reader.optionalValue("SMTP_URL", expected: "an smtp:// or smtps:// URL", secret: true) { raw -> URL? in
            guard let url = URL(string: raw), ["smtp", "smtps"].contains(url.scheme ?? ""), url.host?.isEmpty == false else { return nil }
            return url
        }
        let caFile = try reader.optionalValue("SMTP_CA_FILE", expected: "a readable PEM file of CA certificates") { path in
            FileManager.default.isReadableFile(atPath: path) ? path : nil
        }
        endpoint = url.map { SMTPEndpoint(url: $0, caFile: caFile) }
        sender = try reader.value(
            "SMTP_FROM",
            expected: "a sender such as Splash <no-reply@example.com>",
            default: MailSender("Splash <no-reply@splash.localhost>")
        ) {
            MailSender($0)
        }
    }

    /// Where the relay sends: the SMTP server, or the catcher without one.
    package var destination: MailDestination {
        endpoint.map { .smtp(SMTPClient(endpoint: $0, sender: sender)) } ?? .catcher
    }
}
