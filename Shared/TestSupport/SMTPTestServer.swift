import Foundation
import LocalStack

/// An SMTP server on loopback for tests: Python's aiosmtpd (PyPI, which `make test` installs), a
/// server nobody here wrote. It offers STARTTLS with a certificate of a `TestCertificateAuthority`
/// (and requires it with `requireTLS`), asks for AUTH when given a user, refuses any recipient at
/// `refused.example` with 550, and keeps every message it takes as a file (`received`). `stop()`
/// kills it (SMTP down); `start()` brings it back on the same port.
package final class SMTPTestServer: Sendable {
    /// One message as the server took it.
    package struct Received: Sendable, Decodable {
        package var from: String
        package var to: [String]
        /// The whole message as it arrived (headers and MIME parts).
        package var data: String
        /// Whether the session had switched to TLS (STARTTLS) when the message came.
        package var tls: Bool
        /// The user the session authenticated as, if any.
        package var user: String?
        /// The message's parts decoded by Python's `email` package: content type → text.
        package var parts: [String: String]
        package var subject: String
    }

    package let port: Int
    package let authority: TestCertificateAuthority
    package let credentials: (user: String, password: String)?
    package let requireTLS: Bool
    private let folder: URL
    private let script: URL
    private let server = KillableServer()

    /// `smtp://[user:password@]127.0.0.1:<port>`.
    package var url: String {
        let login = credentials.map { "\($0.user):\($0.password)@" } ?? ""
        return "smtp://\(login)127.0.0.1:\(port)"
    }

    package init(credentials: (user: String, password: String)? = nil, requireTLS: Bool = false, offerTLS: Bool = true) async throws {
        port = freePort()
        authority = try TestCertificateAuthority()
        self.credentials = credentials
        self.requireTLS = requireTLS
        folder = authority.folder.appendingPathComponent("mail")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        script = authority.folder.appendingPathComponent("smtp_server.py")
        try Self.program(offerTLS: offerTLS).write(to: script, atomically: true, encoding: .utf8)
        try await start()
    }

    package func start() async throws {
        let arguments = [
            "python3", script.path, String(port), folder.path, authority.serverCertificateFile, authority.serverKeyFile,
            credentials?.user ?? "", credentials?.password ?? "", requireTLS ? "1" : "0",
        ]
        try await server.start("aiosmtpd", arguments, port: port)
    }

    /// Kills the server (SIGKILL: mid-session clients see the connection drop).
    package func stop() {
        server.kill()
    }

    /// The folder the server writes each message to, as `<time>-<n>.json` (the fields of
    /// `Received`): a script reads its mail there as a person reads an inbox.
    package var mailFolder: String { folder.path }

    /// Every message taken so far, in the order taken.
    package var received: [Received] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        return names.compactMap { name in
            (try? Data(contentsOf: folder.appendingPathComponent(name))).flatMap { try? JSONDecoder().decode(Received.self, from: $0) }
        }
    }

    private static func program(offerTLS: Bool) -> String {
        """
        import asyncio, email, email.policy, json, os, signal, ssl, sys, time
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword

        port, folder, cert, key, user, password, require_tls = sys.argv[1:8]
        count = 0

        class Handler:
            async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
                if address.endswith("@refused.example"):
                    return "550 5.1.1 No such user here"
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, server, session, envelope):
                global count
                count += 1
                raw = envelope.content.decode("utf-8", "replace")
                message = email.message_from_string(raw, policy=email.policy.default)
                parts = {}
                for part in message.walk():
                    if not part.is_multipart():
                        parts[part.get_content_type()] = part.get_content()
                login = session.auth_data
                record = {
                    "from": envelope.mail_from, "to": envelope.rcpt_tos, "data": raw,
                    "tls": session.ssl is not None,
                    "user": login.decode() if isinstance(login, bytes) else login,
                    "parts": parts, "subject": str(message["subject"]),
                }
                name = os.path.join(folder, "%015d-%06d.json" % (time.time_ns() // 1000, count))
                with open(name + ".tmp", "w") as f:
                    json.dump(record, f)
                os.rename(name + ".tmp", name)
                return "250 Message accepted"

        def authenticator(server, session, envelope, mechanism, auth_data):
            if isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user and auth_data.password.decode() == password:
                return AuthResult(success=True, auth_data=auth_data.login)
            return AuthResult(success=False, handled=False)

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        controller = Controller(
            Handler(), hostname="127.0.0.1", port=int(port),
            tls_context=context if \(offerTLS ? "True" : "False") else None, require_starttls=require_tls == "1",
            authenticator=authenticator if user else None, auth_required=bool(user), auth_require_tls=bool(user) and \(offerTLS ? "True" : "False"),
        )
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        controller.start()
        signal.sigwait([signal.SIGTERM, signal.SIGINT])
        controller.stop()
        """
    }
}
