import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

extension HTTPField.Name {
    /// `X-Supabase-Api-Version`: selects the error shape; echoed on every response.
    static let supabaseAPIVersion = Self("X-Supabase-Api-Version")!
    /// `x-sb-error-code`: the error code of an error response, whatever its shape.
    static let errorCode = Self("x-sb-error-code")!
}

/// Writes every error of auth in GoTrue's shape, including the ones ServiceKit raises itself (an
/// oversized body, a timeout, an unknown route):
///
/// - without `X-Supabase-Api-Version`: `{"code":400,"error_code":"…","msg":"…"}`;
/// - with it (`2024-01-01` or later): `{"code":"…","message":"…"}`.
///
/// Both carry `x-sb-error-code`. A weak password adds `weak_password.reasons`. Server faults
/// become `unexpected_failure`, never one of the four codes that sign a client out.
enum GoTrueErrorRenderer {
    static let renderer = ProblemRenderer { problem, request, requestID in
        response(for: problem, apiVersion: request.headers[.supabaseAPIVersion], requestID: requestID)
    }

    static func response(for problem: Problem, apiVersion: String?, requestID: String) -> Response {
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
        headers[.errorCode] = code
        if let apiVersion {
            headers[.supabaseAPIVersion] = apiVersion
        }
        return Response(status: problem.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Auth's own problems carry their GoTrue code as their type; ServiceKit's get the nearest one.
    static func errorCode(for problem: Problem) -> String {
        let prefix = "urn:splash:problem:"
        let slug = problem.type.hasPrefix(prefix) ? String(problem.type.dropFirst(prefix.count)) : nil
        switch (slug, problem.status.code) {
        case ("malformed-body", _): return "bad_json"
        case ("body-too-large", _): return "request_too_large"
        case ("request-timeout", _): return "request_timeout"
        case ("validation", _): return "validation_failed"
        case (let slug?, _) where slug.allSatisfy({ $0.isLowercase || $0 == "_" }): return slug
        case (_, 404): return "not_found"
        case (_, 405): return "method_not_allowed"
        case (_, 400..<500): return "validation_failed"
        default: return "unexpected_failure"
        }
    }
}
