import Foundation
import Hummingbird
import Logging
import ServiceKit

/// The domain errors of the tiny service, as a real service would declare them.
enum WidgetError: ProblemConvertible {
    case notFound(id: String)

    var problem: Problem {
        switch self {
        case .notFound(let id):
            Problem(status: .notFound, type: "widget-not-found", title: "Widget not found", detail: "There is no widget \(id).")
        }
    }
}

/// An internal failure whose text must not reach a client.
struct InternalFailure: Error, CustomStringConvertible {
    var description: String { "connection to db-7.internal:5432 refused (pool splash_auth exhausted)" }
}

/// A tiny application built with ServiceKit the way every service builds its own.
func makeTinyApplication(
    metrics: ServiceMetrics = ServiceMetrics(),
    logger: Logger = Logger(label: "tiny"),
    readiness: [ReadinessCheck] = []
) -> ServiceApplication<AppRequestContext> {
    var parts = ServiceApplicationParts(
        name: "tiny",
        http: HTTPServerSettings(port: 0, requestTimeout: .seconds(5), maxBodySize: 1_024),
        logger: logger,
        metrics: metrics
    )
    parts.readiness = readiness
    parts.routePolicies = [
        RoutePolicy(pathPrefix: "/small", maxBodySize: 16, timeout: .seconds(5)),
        RoutePolicy(pathPrefix: "/slow", maxBodySize: 1_024, timeout: .milliseconds(300)),
    ]
    return makeServiceApplication(parts, context: AppRequestContext.self) { router in
        router.get("/hello") { _, _ in "hello" }
        router.get("/widgets/{id}") { _, context -> String in
            throw WidgetError.notFound(id: try context.parameters.require("id"))
        }
        router.post("/small/echo") { request, context -> String in
            let body = try await request.body.collect(upTo: context.maxUploadSize)
            return String(buffer: body)
        }
        router.post("/small/count") { request, _ -> String in
            // Streams the body without a limit of its own: only the route policy bounds it.
            var count = 0
            for try await chunk in request.body { count += chunk.readableBytes }
            return String(count)
        }
        router.post("/widgets") { _, _ -> String in
            throw Problem.validation([
                FieldError(.body(pointer: "/name"), "must not be empty"),
                FieldError(.parameter("dry_run"), "must be true or false"),
            ])
        }
        router.get("/boom") { _, _ -> String in
            throw InternalFailure()
        }
        router.get("/slow") { _, _ -> String in
            try await Task.sleep(for: .seconds(10))
            return "too late"
        }
        router.get("/unhurried") { request, _ -> String in
            let milliseconds = request.uri.queryParameters.get("ms", as: Int.self) ?? 500
            try await Task.sleep(for: .milliseconds(milliseconds))
            return "finished"
        }
    }
}
