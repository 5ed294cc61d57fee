import Hummingbird

/// Writes a `Problem` as a response. Every error response of a service goes through one renderer:
/// RFC 9457 `application/problem+json` by default; a service whose clients expect another error
/// shape (auth speaks GoTrue's) supplies its own.
package struct ProblemRenderer: Sendable {
    private let render: @Sendable (Problem, Request, _ requestID: String) -> Response

    /// - Parameter render: the response for a problem that occurred while answering a request.
    package init(_ render: @escaping @Sendable (Problem, Request, _ requestID: String) -> Response) {
        self.render = render
    }

    /// `application/problem+json`, with the request path as `instance`.
    package static let problemJSON = ProblemRenderer { problem, request, requestID in
        problem.response(path: request.uri.path, requestID: requestID)
    }

    /// The response for `problem`; under `/rest/v1`, whatever the service's renderer, in
    /// PostgREST's shape (`Problem.document`).
    package func response(for problem: Problem, to request: Request, requestID: String) -> Response {
        if PostgRESTError.covers(request.uri.path) { return problem.response(path: request.uri.path, requestID: requestID) }
        return render(problem, request, requestID)
    }
}
