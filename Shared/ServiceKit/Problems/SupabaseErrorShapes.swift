import Foundation
import HTTPTypes
import NIOCore

extension HTTPField.Name {
    /// `X-Supabase-Api-Version`: selects GoTrue's error shape; auth echoes it on every response.
    package static let supabaseAPIVersion = Self("X-Supabase-Api-Version")!
    /// `x-sb-error-code`: the error code of a GoTrue error response, whatever its shape.
    package static let supabaseErrorCode = Self("x-sb-error-code")!
}

/// The error shape a client expects at a path: Supabase's clients read their own shapes under
/// their protocols' paths — `/rest/v1` PostgREST's, `/auth/v1` GoTrue's, `/storage/v1` Storage's —
/// whichever process answers there (the service, or the gateway in front of it refusing a body,
/// a token or a rate, or finding the service down). Everything else is problem JSON.
package enum ErrorShape: Sendable, Equatable {
    case problemJSON
    case postgREST
    /// `apiVersion`: the request's `X-Supabase-Api-Version`, which picks GoTrue's newer shape.
    case goTrue(apiVersion: String?)
    case storage

    package init(path: String, headers: HTTPFields) {
        if PostgRESTError.covers(path) {
            self = .postgREST
        } else if Self.isUnder("/auth/v1", path) {
            self = .goTrue(apiVersion: headers[.supabaseAPIVersion])
        } else if Self.isUnder("/storage/v1", path) {
            self = .storage
        } else {
            self = .problemJSON
        }
    }

    private static func isUnder(_ prefix: String, _ path: String) -> Bool {
        path.hasPrefix(prefix) && (path.utf8.count == prefix.utf8.count || path.utf8.dropFirst(prefix.utf8.count).first == UInt8(ascii: "/"))
    }
}

/// GoTrue's error bodies:
///
/// - without `X-Supabase-Api-Version`: `{"code":400,"error_code":"…","msg":"…"}`;
/// - with it (`2024-01-01` or later): `{"code":"…","message":"…"}`.
///
/// Both carry `x-sb-error-code`. A weak password adds `weak_password.reasons`. Server faults
/// become `unexpected_failure`, never one of the four codes that sign a client out.
package enum GoTrueError {
    package static func document(for problem: Problem, apiVersion: String?) -> (headers: HTTPFields, body: ByteBuffer) {
        let code = errorCode(for: problem)
        let message = problem.detail ?? problem.title
        var body: [String: Any]
        if apiVersion != nil {
            body = ["code": code, "message": message]
        } else {
            body = ["code": Int(problem.status.code), "error_code": code, "msg": message]
        }
        if code == "weak_password" {
            body["weak_password"] = ["reasons": problem.errors.map(\.detail)]
        }
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        var headers = problem.headers
        headers[.contentType] = "application/json"
        headers[.supabaseErrorCode] = code
        if let apiVersion {
            headers[.supabaseAPIVersion] = apiVersion
        }
        return (headers, ByteBuffer(bytes: data))
    }

    /// auth's own problems carry their GoTrue code as their type; the others (ServiceKit's, the
    /// gateway's) get the nearest one.
    package static func errorCode(for problem: Problem) -> String {
        let prefix = "urn:splash:problem:"
        let slug = problem.type.hasPrefix(prefix) ? String(problem.type.dropFirst(prefix.count)) : nil
        switch (slug, problem.status.code) {
        case ("malformed-body", _), ("malformed-request", _): return "bad_json"
        case ("body-too-large", _): return "request_too_large"
        case ("request-timeout", _), ("upstream-timeout", _): return "request_timeout"
        case ("validation", _): return "validation_failed"
        case ("rate-limited", _): return "over_request_rate_limit"
        case (let slug?, _) where slug.allSatisfy({ $0.isLowercase || $0 == "_" }): return slug
        case (_, 404): return "not_found"
        case (_, 405): return "method_not_allowed"
        case (_, 400..<500): return "validation_failed"
        default: return "unexpected_failure"
        }
    }
}

/// Supabase Storage's error bodies: `{"statusCode":"404","error":"not_found","message":"…"}`,
/// `statusCode` a string. social's problems under `/storage/v1` carry Storage's code as their
/// type; the others get the nearest one.
package enum StorageErrorBody {
    package static func document(for problem: Problem) -> (headers: HTTPFields, body: ByteBuffer) {
        let prefix = "urn:splash:problem:"
        var code = problem.type.hasPrefix(prefix) ? String(problem.type.dropFirst(prefix.count)) : problem.title
        switch code {
        case "body-too-large": code = "EntityTooLarge"
        case "malformed-body", "malformed-request", "validation": code = "InvalidRequest"
        case "invalid-token", "unauthenticated": code = "InvalidJWT"
        default: break
        }
        let body: [String: String] = ["statusCode": String(problem.status.code), "error": code, "message": problem.detail ?? problem.title]
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        var headers = problem.headers
        headers[.contentType] = "application/json"
        return (headers, ByteBuffer(bytes: data))
    }
}
