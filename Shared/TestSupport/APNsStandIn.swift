import Crypto
import Foundation
import Identity
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import SwiftASN1
import Synchronization
import X509

/// A local Apple Push Notification service for tests: HTTP/2 over TLS only (a CA made for the
/// run, whose certificate a client is given to trust), checking each request as APNs does — the
/// provider token's ES256 signature against the team's key, its `kid` and `iss`, and every header
/// and the body — and answering Apple's errors, or whatever a test scripts, on demand.
package final class APNsStandIn: Sendable {
    /// One notification as it arrived.
    package struct Received: Sendable {
        package var deviceToken: String
        package var headers: [String: String]
        package var body: String
        package var at: Date
        /// Which TLS connection it came on (1 for the first).
        package var connection: Int
        package var status: Int
        package var reason: String?

        /// What the notification is about: its payload's `splash.id` (an order, an edit, a post).
        package var subject: String? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { return nil }
            return (object["splash"] as? [String: Any])?["id"] as? String
        }
    }

    /// What the stand-in answers the next requests (after its own checks pass).
    package struct Answer: Sendable {
        package var status: Int
        package var reason: String?
        /// For 410: when the device stopped taking notifications.
        package var timestamp: Date?

        package init(status: Int, reason: String? = nil, timestamp: Date? = nil) {
            self.status = status
            self.reason = reason
            self.timestamp = timestamp
        }
    }

    private struct State {
        var received: [Received] = []
        var script: [Answer] = []
        /// Answers for particular device tokens, every time.
        var byDevice: [String: Answer] = [:]
        var connections = 0
        var channels: [ObjectIdentifier: Channel] = [:]
        var listener: Channel?
        /// Held back before answering, to play a slow APNs.
        var delay: Duration = .zero
    }

    /// The PEM of the CA that signed the server's certificate; `caFile` holds it.
    package let caPEM: String
    package let caFile: String
    /// The team's `.p8` key (PEM) a client signs provider tokens with; `keyFile` holds it.
    package let keyPEM: String
    package let keyFile: String
    package let keyID = "ABC123DEFG"
    package let teamID = "DEF123GHIJ"
    private let teamKey: P256.Signing.PublicKey
    private let tls: NIOSSLContext
    private let state = Mutex(State())
    private let portBox = Mutex(0)

    /// The base URL (`https://127.0.0.1:<port>`) once started.
    package var baseURL: String { "https://127.0.0.1:\(portBox.withLock { $0 })" }

    package init() throws {
        let authority = try TestCertificateAuthority()
        caPEM = authority.caPEM
        caFile = authority.caFile
        let team = P256.Signing.PrivateKey()
        teamKey = team.publicKey
        keyPEM = team.pemRepresentation
        keyFile = authority.folder.appendingPathComponent("AuthKey.p8").path
        try keyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)

        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(authority.serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(authority.serverKeyPEM.utf8), format: .pem))
        )
        configuration.applicationProtocols = ["h2"]
        tls = try NIOSSLContext(configuration: configuration)
    }

    /// Listens on loopback: a free port the first time, the same port after a `stop()` (APNs
    /// coming back where it was).
    package func start() async throws {
        let port = portBox.withLock { $0 }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                let number = state.withLock { state in
                    state.connections += 1
                    state.channels[ObjectIdentifier(channel)] = channel
                    return state.connections
                }
                channel.closeFuture.whenComplete { [self] _ in
                    _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                }.flatMap {
                    channel.configureHTTP2Pipeline(
                        mode: .server,
                        inboundStreamInitializer: { [self] stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandlers([
                                    HTTP2FramePayloadToHTTP1ServerCodec(), StreamHandler(standIn: self, connection: number),
                                ])
                            }
                        }
                    ).map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        portBox.withLock { $0 = channel.localAddress?.port ?? 0 }
        state.withLock { $0.listener = channel }
    }

    /// Stops listening and resets every open connection: APNs gone.
    package func stop() async {
        let (listener, channels) = state.withLock { state in
            let taken = (state.listener, Array(state.channels.values))
            state.listener = nil
            return taken
        }
        try? await listener?.close()
        for channel in channels { try? await channel.close() }
    }

    /// The answers for the next requests, in order; then the default (200) again.
    package func script(_ answers: [Answer]) {
        state.withLock { $0.script += answers }
    }

    /// The answer for every request to `deviceToken`.
    package func answer(_ answer: Answer?, forDevice deviceToken: String) {
        state.withLock { $0.byDevice[deviceToken] = answer }
    }

    /// Holds each answer back this long (a slow APNs).
    package func delayAnswers(by delay: Duration) {
        state.withLock { $0.delay = delay }
    }

    package var received: [Received] { state.withLock { $0.received } }
    /// How many TLS connections have been made to it.
    package var connections: Int { state.withLock { $0.connections } }

    /// Checks a request as APNs does and decides its answer.
    fileprivate func handle(path: String, method: HTTPMethod, headers: HTTPHeaders, body: ByteBuffer, connection: Int) -> (Answer, Duration) {
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        let answer = check(token: token, method: method, headers: headers, body: body)
        return state.withLock { state in
            var final = answer
            if answer.status == 200 {
                if let forDevice = state.byDevice[token] {
                    final = forDevice
                } else if !state.script.isEmpty {
                    final = state.script.removeFirst()
                }
            }
            var fields: [String: String] = [:]
            for (name, value) in headers { fields[name.lowercased()] = value }
            state.received.append(
                Received(
                    deviceToken: token,
                    headers: fields,
                    body: String(buffer: body),
                    at: Date(),
                    connection: connection,
                    status: final.status,
                    reason: final.reason
                )
            )
            return (final, state.delay)
        }
    }

    private func check(token: String, method: HTTPMethod, headers: HTTPHeaders, body: ByteBuffer) -> Answer {
        guard method == .POST else { return Answer(status: 405, reason: "MethodNotAllowed") }
        guard token.utf8.count == 64, token.allSatisfy(\.isHexDigit) else { return Answer(status: 400, reason: "BadDeviceToken") }
        guard let authorization = headers.first(name: "authorization"), authorization.hasPrefix("bearer ") else {
            return Answer(status: 403, reason: "MissingProviderToken")
        }
        if let refused = verify(providerToken: String(authorization.dropFirst("bearer ".count))) { return refused }
        guard let topic = headers.first(name: "apns-topic"), !topic.isEmpty else { return Answer(status: 400, reason: "MissingTopic") }
        guard ["alert", "background"].contains(headers.first(name: "apns-push-type") ?? "") else {
            return Answer(status: 400, reason: "InvalidPushType")
        }
        guard ["5", "10"].contains(headers.first(name: "apns-priority") ?? "10") else { return Answer(status: 400, reason: "BadPriority") }
        if let expiration = headers.first(name: "apns-expiration"), Int(expiration) == nil {
            return Answer(status: 400, reason: "BadExpirationDate")
        }
        if let id = headers.first(name: "apns-id"), UUID(uuidString: id) == nil || id != id.lowercased() {
            return Answer(status: 400, reason: "BadMessageId")
        }
        if let collapse = headers.first(name: "apns-collapse-id"), collapse.utf8.count > 64 { return Answer(status: 400, reason: "BadCollapseId") }
        guard body.readableBytes <= 4_096 else { return Answer(status: 413, reason: "PayloadTooLarge") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any], object["aps"] is [String: Any] else {
            return Answer(status: 400, reason: "PayloadEmpty")
        }
        return Answer(status: 200)
    }

    /// `nil` when the provider token is the team's, signed with its key; else Apple's refusal.
    private func verify(providerToken: String) -> Answer? {
        let parts = providerToken.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(String(parts[0])), let claimsData = Base64URL.decode(String(parts[1])),
            let signatureData = Base64URL.decode(String(parts[2])),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { return Answer(status: 403, reason: "InvalidProviderToken") }
        guard header["alg"] as? String == "ES256", header["kid"] as? String == keyID, claims["iss"] as? String == teamID,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            teamKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return Answer(status: 403, reason: "InvalidProviderToken") }
        guard let issuedAt = claims["iat"] as? Int, Date().timeIntervalSince1970 - Double(issuedAt) < 3_600 else {
            return Answer(status: 403, reason: "ExpiredProviderToken")
        }
        return nil
    }
}

/// One HTTP/2 stream: a request in, an answer out.
private final class StreamHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let standIn: APNsStandIn
    private let connection: Int
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(standIn: APNsStandIn, connection: Int) {
        self.standIn = standIn
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body(var part): body.writeBuffer(&part)
        case .end:
            guard let head else { return }
            let (answer, delay) = standIn.handle(path: head.uri, method: head.method, headers: head.headers, body: body, connection: connection)
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(
                in: .nanoseconds(Int64(delay.components.seconds) * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
            ) {
                let (handler, context) = loopBound.value
                handler.respond(answer, context: context)
            }
        }
    }

    private func respond(_ answer: APNsStandIn.Answer, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "apns-id", value: head?.headers.first(name: "apns-id") ?? UUID().uuidString.lowercased())
        var buffer = ByteBuffer()
        if let reason = answer.reason {
            var json = #"{"reason":"\#(reason)""#
            if let timestamp = answer.timestamp { json += #","timestamp":\#(Int64(timestamp.timeIntervalSince1970 * 1_000))"# }
            json += "}"
            buffer = ByteBuffer(string: json)
            headers.add(name: "content-type", value: "application/json")
        }
        headers.add(name: "content-length", value: String(buffer.readableBytes))
        let status = HTTPResponseStatus(statusCode: answer.status)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
        if buffer.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
