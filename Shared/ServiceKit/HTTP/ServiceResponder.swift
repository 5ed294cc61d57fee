import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension HTTPField.Name {
    /// `X-Request-Id`: correlates one request across services and log lines.
    package static let requestID = Self("X-Request-Id")!
}

/// The edge of every Splash service, wrapped around its router.
///
/// For each request it:
/// - takes the caller's `X-Request-Id` when well-formed (1–128 visible ASCII characters) or makes
///   one, attaches it to every log line of the request as `request_id` and returns it;
/// - applies the route's `RoutePolicy`: 413 for a body over the limit (from `Content-Length` at once,
///   or while a chunked body streams in), 503 when the handler runs past the timeout;
/// - turns anything thrown past the router into a problem response;
/// - logs one line (method, path, status, duration) and records `http_requests_total` and
///   `http_request_duration_seconds` by method, route template and status.
///
/// The timeout needs a `Sendable` responder to race against a timer, which is why this is a
/// responder around the router rather than a router middleware.
package struct ServiceResponder<Base: HTTPResponder>: HTTPResponder where Base.Context: ServiceRequestContext {
    package typealias Context = Base.Context

    private let base: Base
    private let policies: RoutePolicies
    private let recorder: RequestRecorder

    package init(base: Base, policies: RoutePolicies, metrics: ServiceMetrics) {
        self.base = base
        self.policies = policies
        self.recorder = metrics.requests
    }

    package func respond(to request: Request, context: Context) async throws -> Response {
        let start = ContinuousClock.now
        var request = request
        var context = context
        let requestID = RequestIDGenerator.id(for: request.headers)
        context.requestID = requestID
        context.logger[metadataKey: "hb.request.id"] = nil
        context.logger[metadataKey: "request_id"] = .string(requestID)

        let policy = policies.policy(for: request.uri.path)
        var response: Response
        var abandoned = false
        do {
            if let declared = request.headers[.contentLength].flatMap(Int.init), declared > policy.maxBodySize {
                throw Problem.bodyTooLarge(limit: policy.maxBodySize)
            }
            context.maxUploadSize = policy.maxBodySize
            request.body = RequestBody(asyncSequence: SizeLimitedBody(base: request.body, limit: policy.maxBodySize))
            if let timeout = policy.timeout {
                response = try await withTimeout(timeout, error: RequestAbandoned(timeout: timeout)) { [base, request, context] in
                    try await base.respond(to: request, context: context)
                }
            } else {
                response = try await base.respond(to: request, context: context)
            }
        } catch {
            abandoned = error is RequestAbandoned
            response = Problem.answering(error, logger: context.logger).response(
                path: request.uri.path,
                requestID: requestID,
                headers: request.headers
            )
        }
        response.headers[.requestID] = requestID
        // An abandoned handler may still be reading the request's body: the connection ends with
        // this answer rather than carry the next request.
        if abandoned { response.headers[.connection] = "close" }
        // The router stores the matched route's template in a box the copies of the context share.
        recorder.record(
            method: request.method,
            path: request.uri.path,
            route: context.endpointPath ?? "unmatched",
            status: response.status,
            elapsed: start.duration(to: .now),
            logger: context.logger
        )
        return response
    }
}

/// The deadline of a request passed; its handler was left to end by itself (`withTimeout`).
private struct RequestAbandoned: ProblemConvertible {
    let timeout: Duration
    var problem: Problem { .requestTimedOut(after: timeout) }
}
