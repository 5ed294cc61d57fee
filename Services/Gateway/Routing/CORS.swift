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
}

extension CORSPolicy.Origins: ExpressibleByArrayLiteral {
    init(arrayLiteral elements: String...) {
        self = .list(Set(elements))
    }
}

/// Answers CORS preflights (403 to an origin not allowed, and to every origin with CORS off) and
/// marks responses to allowed origins. Runs before edge authentication, since a preflight carries
/// no token.
struct CORSMiddleware<Context: ServiceRequestContext>: RouterMiddleware {
    let policy: CORSPolicy

    /// Headers the apps' code may read from responses.
    static var exposedHeaders: String {
        "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Link, X-Total, X-Per-Page, ETag, Cache-Status, Location"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else {
            return try await next(request, context)
        }
        // A preflight is this layer's alone to answer, CORS on or off: it never carries a token,
        // so passing it on would have edge authentication refuse it with a 401.
        let allowed = policy.isEnabled ? policy.allowedOrigin(origin) : nil
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers = HTTPFields()
            headers[.vary] = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
            guard let allowed else {
                throw Problem(status: .forbidden, type: "origin-not-allowed",
                              detail: policy.isEnabled ? "This origin may not call the gateway from a browser." : "The gateway answers no cross-origin calls (GATEWAY_CORS_ORIGINS is empty).",
                              headers: headers)
            }
            headers[.accessControlAllowOrigin] = allowed
            headers[.accessControlAllowMethods] = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
            headers[.accessControlAllowHeaders] = request.headers[.accessControlRequestHeaders]
                ?? "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id, X-Client-Info, apikey"
            headers[.accessControlMaxAge] = String(policy.maxAge.components.seconds)
            return Response(status: .noContent, headers: headers)
        }
        guard policy.isEnabled else { return try await next(request, context) }
        var response = try await next(request, context)
        if let allowed {
            response.headers[.accessControlAllowOrigin] = allowed
            response.headers[.accessControlExposeHeaders] = Self.exposedHeaders
        }
        response.headers[.vary] = response.headers[.vary].map { "\($0), Origin" } ?? "Origin"
        return response
    }
}
