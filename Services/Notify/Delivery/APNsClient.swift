import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceKit

/// Sends notifications to Apple Push Notification service as Apple specifies it: HTTP/2 over TLS
/// (one connection per APNs host, many streams on it), token-based authentication, every header
/// APNs reads, and each answer turned into what happens to the delivery.
struct APNsClient: Sendable {
    let http: HTTPClient
    let token: ProviderToken
    let production: URL
    let sandbox: URL
    let logger: Logger

    /// The client notify talks to APNs with: HTTP/2 when the server offers it (APNs does), with the
    /// extra CA `caFile` trusted (tests, private relays), no redirects.
    static func makeHTTPClient(caFile: String?, logger: Logger) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration, backgroundActivityLogger: logger)
    }

    /// Sends `delivery` once (and once more with a new provider token when Apple says the first
    /// has expired).
    func send(_ delivery: Delivery) async -> APNsAnswer {
        do {
            let first = try token.token()
            let answer = try await post(delivery, bearer: first)
            guard answer.reason == "ExpiredProviderToken" else { return answer }
            guard let renewed = try token.renew(rejected: first) else { return answer }
            logger.info("APNs provider token renewed after ExpiredProviderToken")
            return try await post(delivery, bearer: renewed)
        } catch {
            // Not an answer: the connection failed or broke mid-stream. The same apns-id goes again.
            return APNsAnswer(status: nil, reason: "\(error)", timestamp: nil)
        }
    }

    private func post(_ delivery: Delivery, bearer: String) async throws -> APNsAnswer {
        let base = delivery.environment == .sandbox ? sandbox : production
        var request = HTTPClientRequest(url: base.appendingPathComponent("3/device/\(delivery.deviceToken)").absoluteString)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(bearer)")
        request.headers.add(name: "apns-topic", value: delivery.topic)
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-priority", value: String(delivery.priority))
        request.headers.add(name: "apns-expiration", value: String(Int(delivery.expiresAt.timeIntervalSince1970)))
        request.headers.add(name: "apns-id", value: delivery.apnsID.uuidString.lowercased())
        if let collapseID = delivery.collapseID { request.headers.add(name: "apns-collapse-id", value: collapseID) }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: delivery.payload))
        let response = try await http.execute(request, timeout: .seconds(30), logger: logger)
        let body = try await response.body.collect(upTo: 64 << 10)
        return APNsAnswer(status: Int(response.status.code), body: body)
    }
}

/// What APNs answered one request: its status and, for an error, its `reason` and (410) the
/// `timestamp` the device stopped taking notifications. No status: no answer came.
struct APNsAnswer: Sendable, Equatable {
    var status: Int?
    var reason: String?
    var timestamp: Date?

    init(status: Int?, reason: String?, timestamp: Date?) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
    }

    init(status: Int, body: ByteBuffer) {
        struct ErrorBody: Decodable {
            var reason: String?
            var timestamp: Int64?
        }
        let decoded = body.readableBytes == 0 ? nil : try? JSONDecoder().decode(ErrorBody.self, from: Data(buffer: body))
        self.init(
            status: status,
            reason: decoded?.reason,
            timestamp: decoded?.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1_000) }
        )
    }

    /// What the answer means for the delivery that had `attempts` attempts; `forgetDevice` when
    /// Apple says the device token is no longer good.
    func outcome(attempts: Int, backoff: Backoff) -> (outcome: DeliveryOutcome, forgetDevice: Bool) {
        guard let status else {
            return (.retry(after: backoff.delay(attempt: attempts), status: nil, reason: reason ?? "no answer"), false)
        }
        switch (status, reason) {
        case (200, _):
            return (.delivered(status: 200), false)
        case (410, _), (400, "BadDeviceToken"):
            return (.rejected(status: status, reason: reason ?? "Unregistered"), true)
        case (403, "ExpiredProviderToken"), (429, _), (500...599, _):
            return (.retry(after: backoff.delay(attempt: attempts), status: status, reason: reason ?? "HTTP \(status)"), false)
        default:
            return (.rejected(status: status, reason: reason ?? "HTTP \(status)"), false)
        }
    }
}
