import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceKit

/// Passes a request to its upstream service and the answer back, streaming both bodies: a large
/// upload or download never sits whole in the gateway's memory.
///
/// An upstream that cannot be reached gives 503 within the connect timeout; one that does not
/// answer in the route's time gives 504 (ServiceKit's route timeout); one that breaks the exchange
/// gives 502. A request without a body and with an idempotent method is tried once more when the
/// connection could not be made, since the upstream then never saw it.
struct ReverseProxy: Sendable {
    let client: HTTPClient
    let addresses: ClientAddressResolver
    /// Where `gateway_upstream_errors_total` is counted: the service's registry.
    let metrics: any MetricsFactory

    func forward(_ request: Request, context: some ServiceRequestContext, to group: RouteGroup) async throws -> Response {
        guard let upstream = group.upstream else { throw GatewayProblem.notConfigured(group.name) }
        let outgoing = makeRequest(request, context: context, upstream: upstream)
        let retryable = outgoing.body == nil && [.get, .head, .options, .delete, .put].contains(request.method)
        var attempt = 1
        while true {
            do {
                let response = try await client.execute(outgoing, timeout: .nanoseconds(group.timeout.totalNanoseconds))
                return makeResponse(response)
            } catch {
                let failure = UpstreamFailure(error)
                Counter(label: "gateway_upstream_errors_total", dimensions: [("upstream", group.name), ("kind", failure.rawValue)], factory: metrics).increment()
                if failure == .unreachable, retryable, attempt < 2 {
                    attempt += 1
                    continue
                }
                context.logger.warning("Upstream request failed", metadata: ["upstream": "\(group.name)", "failure": "\(failure.rawValue)", "error": "\(error)"])
                throw failure.problem(group.name)
            }
        }
    }

    private func makeRequest(_ request: Request, context: some ServiceRequestContext, upstream: URL) -> HTTPClientRequest {
        var base = upstream.absoluteString
        if base.hasSuffix("/") { base.removeLast() }
        var outgoing = HTTPClientRequest(url: base + request.uri.description)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for (name, value) in ForwardedHeaders.endToEnd(request.headers) where !Self.gatewayOwned.contains(name.lowercased()) {
            outgoing.headers.add(name: name, value: value)
        }
        // The client's address as we saw it, after what trusted proxies in front of us reported.
        let peer = context.remoteAddress?.ipAddress ?? "unknown"
        let fromTrustedProxy = addresses.isTrusted(peer)
        let trustedChain = fromTrustedProxy ? request.headers[.xForwardedFor] : nil
        outgoing.headers.replaceOrAdd(name: "X-Forwarded-For", value: trustedChain.map { "\($0), \(peer)" } ?? peer)
        let proto = fromTrustedProxy ? request.headers[.xForwardedProto] ?? "http" : "http"
        outgoing.headers.replaceOrAdd(name: "X-Forwarded-Proto", value: proto)
        if let host = request.head.authority {
            outgoing.headers.replaceOrAdd(name: "X-Forwarded-Host", value: host)
        }
        outgoing.headers.replaceOrAdd(name: "X-Request-Id", value: context.requestID)
        if let length = request.headers[.contentLength].flatMap(Int64.init) {
            outgoing.body = length > 0 ? .stream(request.body, length: .known(length)) : nil
        } else if request.headers[.transferEncoding] != nil {
            outgoing.body = .stream(request.body, length: .unknown)
        }
        return outgoing
    }

    /// Set by the gateway itself, whatever the client sent.
    private static let gatewayOwned: Set<String> = ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-request-id"]

    private func makeResponse(_ response: HTTPClientResponse) -> Response {
        var headers = ForwardedHeaders.endToEnd(response.headers)
        headers[.requestID] = nil  // ServiceKit's edge sets ours, which the upstream echoed anyway
        let length = response.headers.first(name: "content-length").flatMap(Int.init)
        let body = response.body
        return Response(
            status: HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
            headers: headers,
            body: ResponseBody(contentLength: length) { writer in
                try await writer.write(body)
                try await writer.finish(nil)
            }
        )
    }
}

/// How an upstream exchange failed, as far as the client is concerned.
enum UpstreamFailure: String, Sendable {
    /// No connection could be made: 503, and safe to retry.
    case unreachable
    /// Connected, but no answer in time: 504.
    case timeout
    /// The exchange broke: 502.
    case broken

    init(_ error: any Error) {
        if let error = error as? HTTPClientError {
            if error == .connectTimeout {
                self = .unreachable
            } else if [.deadlineExceeded, .readTimeout, .writeTimeout].contains(error) {
                self = .timeout
            } else {
                self = .broken
            }
        } else if error is NIOConnectionError || (error as? IOError).map({ [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH].contains($0.errnoCode) }) == true {
            self = .unreachable
        } else if let error = error as? ChannelError, case .connectTimeout = error {
            self = .unreachable
        } else {
            self = .broken
        }
    }

    func problem(_ upstream: String) -> Problem {
        switch self {
        case .unreachable: GatewayProblem.unavailable(upstream)
        case .timeout: GatewayProblem.timedOut(upstream)
        case .broken: GatewayProblem.badGateway(upstream)
        }
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let xForwardedProto = Self("X-Forwarded-Proto")!
}
