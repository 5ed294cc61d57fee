import Foundation
import TestSupport
import Testing

@testable import Mail

@Suite("Mail over SMTP") struct SMTPTests {
    static let sender = MailSender("Splash <no-reply@splash.example>")!

    static func message(to: String = "aino@example.com") -> MailMessage {
        MailMessage(
            to: to,
            subject: "Kuittisi – tilaus 1a2b",
            text: "Your code:\n\n123456\n\nThanks!",
            html: "<p>Your code: <b>123456</b></p>"
        )
    }

    @Test func aMessageIsTwoPartsAndHeadersTakeNoInjectedLines() throws {
        let rendered = try Self.message().rendered(from: Self.sender, id: UUID(), date: Date(timeIntervalSince1970: 0))
        #expect(rendered.contains("Content-Type: multipart/alternative"))
        #expect(rendered.contains("Content-Type: text/plain; charset=utf-8") && rendered.contains("Content-Type: text/html; charset=utf-8"))
        #expect(rendered.contains("Subject: =?UTF-8?B?"))
        #expect(rendered.contains("Date: Thu, 01 Jan 1970 00:00:00 +0000"))
        #expect(rendered.contains("From: \"Splash\" <no-reply@splash.example>"))
        #expect(!rendered.split(separator: "\r\n").contains { $0.count > 998 })
        var hostile = Self.message(to: "aino@example.com\r\nBcc: all@example.com")
        #expect(throws: MailError.invalidAddress(hostile.to)) { try hostile.rendered(from: Self.sender, id: UUID(), date: Date()) }
        hostile = Self.message()
        hostile.subject = "Hi\r\nBcc: all@example.com"
        let flattened = try hostile.rendered(from: Self.sender, id: UUID(), date: Date())
        #expect(!flattened.contains("\r\nBcc:"))
        #expect(MailSender("Eve <eve@example.com>\r\nBcc: x@example.com") == nil)
    }

    @Test func plainSMTPIsAllowedOnlyToLoopback() {
        #expect(!SMTPEndpoint(url: URL(string: "smtp://127.0.0.1:25")!, caFile: nil).requiresTLS)
        #expect(!SMTPEndpoint(url: URL(string: "smtp://localhost:2525")!, caFile: nil).requiresTLS)
        #expect(SMTPEndpoint(url: URL(string: "smtp://mail.example.com:587")!, caFile: nil).requiresTLS)
        #expect(SMTPEndpoint(url: URL(string: "smtp://10.0.0.5:25")!, caFile: nil).requiresTLS)
        #expect(SMTPEndpoint(url: URL(string: "smtps://127.0.0.1:465")!, caFile: nil).requiresTLS)
    }

    @Test func aMessageGoesOverStartTLSWithAuthAndReadsBackAsSent() async throws {
        let server = try await SMTPTestServer(credentials: ("splash", "s3cret pass"), requireTLS: true)
        defer { server.stop() }
        let url = try #require(URL(string: "smtp://splash:s3cret%20pass@127.0.0.1:\(server.port)"))
        let client = SMTPClient(endpoint: SMTPEndpoint(url: url, caFile: server.authority.caFile), sender: Self.sender)
        try await client.send(Self.message(), id: UUID())
        let received = try #require(server.received.first)
        #expect(received.tls, "STARTTLS was used")
        #expect(received.user == "splash")
        #expect(received.from == "no-reply@splash.example")
        #expect(received.to == ["aino@example.com"])
        #expect(received.subject == "Kuittisi – tilaus 1a2b")
        #expect(received.parts["text/plain"]?.contains("\n123456\n") == true, "\(received.parts)")
        #expect(received.parts["text/html"]?.contains("<b>123456</b>") == true)
        // The password never reaches the server in the clear: STARTTLS came before AUTH.
        #expect(!received.data.contains("s3cret"))
    }

    @Test func wrongCredentialsAnUntrustedCertificateAndAMissingStartTLSAreRefused() async throws {
        let server = try await SMTPTestServer(credentials: ("splash", "right"))
        defer { server.stop() }
        let wrong = SMTPClient(
            endpoint: SMTPEndpoint(url: URL(string: "smtp://splash:wrong@127.0.0.1:\(server.port)")!, caFile: server.authority.caFile),
            sender: Self.sender
        )
        await #expect(throws: MailError.self) { try await wrong.send(Self.message(), id: UUID()) }
        // Not told to trust the test CA: the certificate is refused rather than the mail sent.
        let untrusted = SMTPClient(
            endpoint: SMTPEndpoint(url: URL(string: "smtp://splash:right@127.0.0.1:\(server.port)")!, caFile: nil),
            sender: Self.sender
        )
        await #expect(throws: MailError.self) { try await untrusted.send(Self.message(), id: UUID()) }
        #expect(server.received.isEmpty)

        let plain = try await SMTPTestServer(offerTLS: false)
        defer { plain.stop() }
        let loopbackURL = URL(string: "smtp://127.0.0.1:\(plain.port)")!
        // Required (as it is to any host but loopback): a server without STARTTLS is refused.
        let required = SMTPClient(endpoint: SMTPEndpoint(url: loopbackURL, caFile: nil, requiresTLS: true), sender: Self.sender)
        await #expect(throws: MailError.self) { try await required.send(Self.message(), id: UUID()) }
        #expect(plain.received.isEmpty)
        // To loopback it is allowed.
        try await SMTPClient(endpoint: SMTPEndpoint(url: loopbackURL, caFile: nil), sender: Self.sender).send(Self.message(), id: UUID())
        #expect(plain.received.first?.tls == false)
    }

    @Test func aRecipientRefusedForGoodIsNotWorthRetrying() async throws {
        let server = try await SMTPTestServer()
        defer { server.stop() }
        let client = SMTPClient(
            endpoint: SMTPEndpoint(url: URL(string: server.url)!, caFile: server.authority.caFile),
            sender: Self.sender
        )
        do {
            try await client.send(Self.message(to: "nobody@refused.example"), id: UUID())
            Issue.record("a refused recipient was sent to")
        } catch let error as MailError {
            #expect(!error.isTransient, "\(error)")
        }
        server.stop()
        // A server that is down is worth retrying.
        do {
            try await client.send(Self.message(), id: UUID())
            Issue.record("sent to a server that is down")
        } catch let error as MailError {
            #expect(error.isTransient, "\(error)")
        }
    }
}
