import CCurl
import Foundation
import NIOPosix
import ServiceKit
import Synchronization

/// Where mail goes (`SMTP_URL`) and how: `smtp://[user:password@]host[:port]` upgraded with
/// STARTTLS — required, a server that does not offer it refused — except to a loopback address,
/// where plain SMTP is allowed (tests, a local catcher); `smtps://…` with TLS from the start.
/// `SMTP_CA_FILE` adds a CA to trust beside the system's.
package struct SMTPEndpoint: Sendable, Equatable {
    package var url: URL
    package var caFile: String?
    /// Whether the session must be encrypted: STARTTLS or `smtps`, a server without refused. By
    /// default everywhere but loopback.
    package var requiresTLS: Bool

    package init(url: URL, caFile: String?, requiresTLS: Bool? = nil) {
        self.url = url
        self.caFile = caFile
        // Plain SMTP is allowed to this machine only.
        self.requiresTLS = requiresTLS ?? (url.scheme == "smtps" || !url.pointsToLoopback)
    }
}

/// Sends mail over SMTP with libcurl, one message per exchange, on NIO's blocking-work threads
/// (libcurl's easy interface blocks). Exchanges take turns on one libcurl handle, whose connection
/// cache keeps the session to the server open between them (no new connection, STARTTLS and
/// login per mail while mail keeps coming).
package struct SMTPClient: Sendable {
    package let endpoint: SMTPEndpoint
    package let sender: MailSender
    /// How long one exchange may take, connecting included.
    package var timeout: Duration = .seconds(30)
    private let handle = CurlHandle()

    package init(endpoint: SMTPEndpoint, sender: MailSender) {
        self.endpoint = endpoint
        self.sender = sender
        _ = SMTPClient.globalInit
    }

    /// libcurl's process-wide set-up, once, before any handle is made.
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Sends `message`, rendered with `id` as its Message-ID.
    /// - Throws: `MailError.delivery` when the exchange failed, `invalidAddress` before it starts.
    package func send(_ message: MailMessage, id: UUID, date: Date = Date()) async throws {
        let rendered = try message.rendered(from: sender, id: id, date: date)
        try await NIOThreadPool.singleton.runIfActive { try self.exchange(rendered, to: message.to) }
    }

    private func exchange(_ rendered: String, to recipient: String) throws(MailError) {
        try handle.withHandle { (curl) throws(MailError) in try exchange(rendered, to: recipient, on: curl) }
    }

    private func exchange(_ rendered: String, to recipient: String, on curl: UnsafeMutableRawPointer) throws(MailError) {
        // Every option set anew; the handle keeps only its caches (connections, TLS sessions, DNS).
        curl_easy_reset(curl)
        let upload = Upload(Array(rendered.utf8))
        let context = Unmanaged.passRetained(upload)
        defer { context.release() }
        let recipients: UnsafeMutablePointer<curl_slist>? = curl_slist_append(nil, recipient)
        defer { curl_slist_free_all(recipients) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        var url = endpoint.url
        let user = url.user.flatMap { $0.removingPercentEncoding }
        let password = url.password.flatMap { $0.removingPercentEncoding }
        if user != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            // Credentials go as options, not in the URL libcurl may log.
            components.user = nil
            components.password = nil
            url = components.url ?? url
        }
        // Required: STARTTLS or fail. Otherwise (loopback): STARTTLS when the server offers it.
        let tls = Int(endpoint.requiresTLS ? CURLUSESSL_ALL.rawValue : CURLUSESSL_TRY.rawValue)
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errors in
            splash_curl_set_string(curl, CURLOPT_URL, url.absoluteString)
            splash_curl_set_string(curl, CURLOPT_MAIL_FROM, "<\(sender.address)>")
            splash_curl_set_list(curl, CURLOPT_MAIL_RCPT, recipients)
            splash_curl_set_long(curl, CURLOPT_UPLOAD, 1)
            splash_curl_set_read_function(curl) { buffer, size, count, context in
                guard let buffer, let context else { return 0 }
                return Unmanaged<Upload>.fromOpaque(context).takeUnretainedValue().read(into: buffer, capacity: size * count)
            }
            splash_curl_set_pointer(curl, CURLOPT_READDATA, context.toOpaque())
            splash_curl_set_long(curl, CURLOPT_USE_SSL, tls)
            splash_curl_set_long(curl, CURLOPT_TIMEOUT_MS, Int(timeout.components.seconds * 1_000))
            splash_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT_MS, 10_000)
            splash_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
            splash_curl_set_pointer(curl, CURLOPT_ERRORBUFFER, errors.baseAddress)
            if let user { splash_curl_set_string(curl, CURLOPT_USERNAME, user) }
            if let password { splash_curl_set_string(curl, CURLOPT_PASSWORD, password) }
            if let caFile = endpoint.caFile { splash_curl_set_string(curl, CURLOPT_CAINFO, SMTPClient.trustedCertificates(adding: caFile)) }
            return curl_easy_perform(curl)
        }
        guard code != CURLE_OK else { return }
        var reply = 0
        splash_curl_get_long(curl, CURLINFO_RESPONSE_CODE, &reply)
        let words = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        throw .delivery(code: Int(code.rawValue), message: words.isEmpty ? String(cString: curl_easy_strerror(code)) : words, reply: reply)
    }

    /// A CA bundle of the system's certificates and `caFile`'s (libcurl's CAINFO replaces the
    /// default bundle rather than adding to it), written once per file.
    static func trustedCertificates(adding caFile: String) -> String {
        bundles.withLock { made in
            if let path = made[caFile] { return path }
            let system =
                ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"].lazy
                .compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.first ?? ""
            let extra = (try? String(contentsOfFile: caFile, encoding: .utf8)) ?? ""
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("splash-smtp-ca-\(UUID().uuidString.prefix(8)).pem").path
            guard (try? (system + "\n" + extra).write(toFile: path, atomically: true, encoding: .utf8)) != nil else { return caFile }
            made[caFile] = path
            return path
        }
    }

    private static let bundles = Mutex<[String: String]>([:])
}

/// One libcurl easy handle, used by one exchange at a time; made on first use, cleaned up with its
/// owner.
private final class CurlHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var curl: UnsafeMutableRawPointer?

    func withHandle<Result>(_ body: (UnsafeMutableRawPointer) throws(MailError) -> Result) throws(MailError) -> Result {
        lock.lock()
        defer { lock.unlock() }
        if curl == nil { curl = curl_easy_init() }
        guard let curl else { throw .delivery(code: -1, message: "curl_easy_init failed", reply: 0) }
        return try body(curl)
    }

    deinit {
        if let curl { curl_easy_cleanup(curl) }
    }
}

/// The bytes libcurl reads the message from.
private final class Upload: @unchecked Sendable {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Called on the thread running the exchange only.
    func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        let count = min(capacity, bytes.count - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            UnsafeMutableRawBufferPointer(start: buffer, count: count).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count])
            )
        }
        offset += count
        return count
    }
}
