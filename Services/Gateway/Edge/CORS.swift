import HTTPTypes
import Hummingbird
import ServiceKit

/// Which web origins may call the gateway from a browser (`GATEWAY_CORS_ORIGINS`). Empty: CORS is
/// off and browsers get no `Access-Control-*` headers; `*`: any origin (credentials are bearer
/// tokens in headers, never cookies, so no origin gets `Allow-Credentials`).
struct CORSPolicy: Sendable, Equatable {
    enum Origins: Sendable, Equatable {
        case any
        case list(Set<String>)
    }

    var origins: Origins
    var maxAge: Duration

    init(origins: Origins, maxAge: Duration) {
        self.origins = origins
        self.maxAge = maxAge
    }

    static func parseOrigins(_ raw: String) -> Origins? {
        let trimmed = raw.trimmingCharacters(in: .whitespaces)
        if trimmed == "*" { return .any }
        let entries = trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard entries.allSatisfy({ ($0.hasPrefix("http://") || $0.hasPrefix("https://")) && !$0.hasSuffix("/") }) else { return nil }
        return .list(Set(entries))
    }

    /// The `Access-Control-Allow-Origin` value for `origin`, or `nil` when it may not call.
    func allowedOrigin(_ origin: String) -> String? {
        switch origins {
        case .any: "*"
        case .list(let allowed): allowed.contains(origin.lowercased()) ? origin : nil
        }
    }

    var isEnabled: Bool { origins != .list([]) }

    /// Headers the apps' code may read from responses.
    static let exposedHeaders =
        "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Link, X-Total, X-Per-Page, ETag, Cache-Status, Location, "
        + "Idempotent-Replayed, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Upload-Offset, Upload-Length, Upload-Expires"

    /// Whether a request is a preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`.
    static func isPreflight(method: HTTPRequest.Method, origin: String?, requestMethod: String?) -> Bool {
        method == .options && origin != nil && requestMethod != nil
    }

    /// The answer to a preflight from `origin`, CORS on or off: a preflight never carries a
    /// token, so it is this layer's alone to answer. The 204's headers, or the 403 (to an origin
    /// not allowed, and to every origin while CORS is off).
    func preflight(origin: String, requestHeaders: String?) -> Result<HTTPFields, Problem> {
        var headers = HTTPFields()
        headers[.vary] = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
        guard isEnabled, let allowed = allowedOrigin(origin) else {
            return .failure(
                Problem(
                    status: .forbidden,
                    type: "origin-not-allowed",
                    detail: isEnabled
                        ? "This origin may not call the gateway from a browser."
                        : "The gateway answers no cross-origin calls (GATEWAY_CORS_ORIGINS is empty).",
                    headers: headers
                )
            )
        }
        headers[.accessControlAllowOrigin] = allowed
        headers[.accessControlAllowMethods] = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
        headers[.accessControlAllowHeaders] =
            requestHeaders ?? "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id, X-Client-Info, apikey"
        headers[.accessControlMaxAge] = String(maxAge.components.seconds)
        return .success(headers)
    }

    /// The fields every answer to a (non-preflight) request from `origin` gets while CORS is on,
    /// refusals included: the allowed origin and the headers it may read, and `Vary: Origin`
    /// whatever the origin.
    func answerFields(origin: String, _ body: (HTTPField.Name, String) -> Void) {
        guard isEnabled else { return }
        if let allowed = allowedOrigin(origin) {
            body(.accessControlAllowOrigin, allowed)
            body(.accessControlExposeHeaders, Self.exposedHeaders)
        }
        body(.vary, "Origin")
    }
}

extension CORSPolicy.Origins: ExpressibleByArrayLiteral {
    init(arrayLiteral elements: String...) {
        self = .list(Set(elements))
    }
}

/// CORS for the gateway's own routes (the event stream, the console, health), with the rules
/// `CORSPolicy` holds; proxied calls get the same from `EdgeProxyHandler`. A `ProblemMiddleware`
/// behind it turns the routes' errors into responses it can mark.
struct CORSMiddleware<Context: ServiceRequestContext>: RouterMiddleware {
    let policy: CORSPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else {
            return try await next(request, context)
        }
        if CORSPolicy.isPreflight(method: request.method, origin: origin, requestMethod: request.headers[.accessControlRequestMethod]) {
            switch policy.preflight(origin: origin, requestHeaders: request.headers[.accessControlRequestHeaders]) {
            case .success(let headers): return Response(status: .noContent, headers: headers)
            case .failure(let problem): throw problem
            }
        }
        guard policy.isEnabled else { return try await next(request, context) }
        // Refusals come back as responses (the router renders them inside this layer), so they
        // get the fields too.
        var response = try await next(request, context)
        var vary = response.headers[.vary]
        policy.answerFields(origin: origin) { name, value in
            if name == .vary {
                vary = vary.map { "\($0), \(value)" } ?? value
            } else {
                response.headers[name] = value
            }
        }
        response.headers[.vary] = vary
        return response
    }
}
