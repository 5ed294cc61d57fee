import Hummingbird
import Logging

/// Turns every error thrown by a handler into a problem response (`application/problem+json`, or
/// under a Supabase protocol's path that protocol's error shape: `ErrorShape`).
///
/// `ProblemConvertible` errors keep their status and text; Hummingbird's `HTTPError`s keep their
/// status, message and headers; malformed JSON bodies become 400s. Anything else is a 500 that says
/// nothing about its cause and is logged, with the request id, at error level.
package struct ProblemMiddleware<Context: ServiceRequestContext>: RouterMiddleware {
    package init() {}

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let problem = Problem.answering(error, logger: context.logger)
            return problem.response(path: request.uri.path, requestID: context.requestID, headers: request.headers)
        }
    }
}

extension Problem {
    /// The problem that answers `error`; unexpected errors are logged on `logger` and answered
    /// with a 500 that reveals nothing.
    package static func answering(_ error: any Error, logger: Logger) -> Problem {
        switch error {
        case let convertible as any ProblemConvertible:
            return convertible.problem
        case let httpError as HTTPError:
            return Problem(status: httpError.status, detail: httpError.body, headers: httpError.headers)
        case let responseError as any HTTPResponseError:
            return Problem(status: responseError.status)
        case let decodingError as DecodingError:
            return Problem(status: .badRequest, type: "malformed-body", title: "Malformed request body", detail: decodingError.clientDescription)
        case let failure as any TransientFailure where failure.isTransient:
            logger.warning(
                "a dependency failed for the moment",
                metadata: ["error": .string((error as? any LogDiagnosable)?.diagnosis ?? String(reflecting: error))]
            )
            return Problem(
                status: .serviceUnavailable,
                type: "temporarily-unavailable",
                title: "Temporarily unavailable",
                detail: "A service this one depends on failed for a moment; retry shortly.",
                headers: [.retryAfter: "1"]
            )
        case is CancellationError:
            logger.debug("request cancelled")
            return Problem(status: .serviceUnavailable, detail: "The request was cancelled before it completed.")
        default:
            logger.error("unhandled error", metadata: ["error": .string((error as? any LogDiagnosable)?.diagnosis ?? String(reflecting: error))])
            return Problem(
                status: .internalServerError,
                detail: "An unexpected error occurred. Quote the request id when reporting it."
            )
        }
    }
}

extension DecodingError {
    /// What is wrong with the body, naming the field, without echoing values back.
    package var clientDescription: String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty ? "the body" : "/" + codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "/")
        }
        switch self {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context.codingPath)) has the wrong type"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "\(path(context.codingPath)) is not valid"
        @unknown default:
            return "the body could not be decoded"
        }
    }
}
