import Contracts
import EventBus
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Logging
import NIOCore
import NIOFoundationCompat
import RealtimeWire
import ServiceKit

/// The console at `/console` (README, "Console"): pages for admins, the sign-in that sets its
/// cookie, the JSON its pages read, and the `admin` channel as SSE.
///
/// Every URL but `/console/login` is for admins only: a page without a session sends the browser
/// to the sign-in; an API call without one is a 401; anyone else's token is a 403 everywhere.
/// Changes (`POST`, `PUT`) must be JSON, which a page of another site cannot send without CORS.
struct ConsoleController: Sendable {
    static let pages = ["events", "consumers", "dead-letters", "users", "deliveries", "notifications", "mail"]

    let access: ConsoleAccess
    let backends: ConsoleBackends
    let realtime: RealtimeController
    let addresses: ClientAddressResolver
    let assets: ConsoleAssets
    let logger: Logger

    func addRoutes(to router: Router<AppRequestContext>) {
        router.get("/console", use: events)
            .get("/console/login", use: loginPage)
            .post("/console/login", use: signIn)
            .post("/console/logout", use: signOut)
            .get("/console/assets/:name", use: asset)
            .get("/console/:page", use: page)
        // The JSON the pages read.
        router.get("/console/api/events", use: eventStream)
            .get("/console/api/consumers", use: consumers)
            .get("/console/api/dead-letters", use: deadLetters)
            .post("/console/api/dead-letters/:topic/replay", use: replay)
            .get("/console/api/users", use: users)
            .get("/console/api/deletions", use: deletions)
            .put("/console/api/users/:id/role", use: setRole)
            .get("/console/api/restaurants", use: restaurants)
            .get("/console/api/orders/:id", use: order)
            .get("/console/api/roads", use: roads)
            .get("/console/api/presence/:channel", use: presence)
            .get("/console/api/notifications", use: notifications)
            .get("/console/api/mail", use: mail)
    }

    // MARK: Pages

    @Sendable func events(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await page(named: "events", request)
    }

    @Sendable func page(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await page(named: context.parameters.get("page") ?? "", request)
    }

    @Sendable func loginPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        assets.loginPage(message: nil, status: .ok)
    }

    @Sendable func signOut(_ request: Request, context: AppRequestContext) async throws -> Response {
        Response(
            status: .seeOther,
            headers: [.location: "/console/login", .setCookie: ConsoleAccess.setCookie("", lifetime: 0, secure: Self.isSecure(request))]
        )
    }

    @Sendable func asset(_ request: Request, context: AppRequestContext) async throws -> Response {
        _ = try await access.requireAdminPage(request.headers)
        guard let asset = assets.asset(named: context.parameters.get("name") ?? "") else { throw Problem(status: .notFound) }
        return asset
    }

    // MARK: The API

    @Sendable func eventStream(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (viewer, _) = try await access.requireAdmin(request.headers)
        try realtime.room(for: "user:\(viewer.user)")
        return await realtime.stream([.admin], to: viewer, lastEventID: request.headers[.lastEventID], context: context)
    }

    @Sendable func consumers(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (_, token) = try await access.requireAdmin(request.headers)
        async let workers = backends.renderWorkers(token: token)
        let groups = try await kafka { try await backends.consumers() }
        return try await json(["groups": groups, "renderWorkers": await workers])
    }

    @Sendable func deadLetters(_ request: Request, context: AppRequestContext) async throws -> Response {
        _ = try await access.requireAdmin(request.headers)
        return try await json(["topics": try await kafka { try await backends.waitingLetters() }])
    }

    @Sendable func replay(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (viewer, _) = try await access.requireAdmin(request.headers)
        return try await replay(request, context: context, topic: context.parameters.get("topic") ?? "", by: viewer)
    }

    @Sendable func users(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (_, token) = try await access.requireAdmin(request.headers)
        return passed(try await backends.users(token: token))
    }

    @Sendable func deletions(_ request: Request, context: AppRequestContext) async throws -> Response {
        _ = try await access.requireAdmin(request.headers)
        return try await json(["deletions": try await kafka { try await backends.deletions() }])
    }

    @Sendable func setRole(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (viewer, token) = try await access.requireAdmin(request.headers)
        let id = try Self.id(in: context, of: "a user")
        let body = try await jsonBody(request, context: context)
        guard let role = body["role"] as? String else {
            throw Problem.validation([FieldError(.body(pointer: "/role"), "role: customer, driver, restaurant or admin")])
        }
        let answer = try await backends.setRole(role, of: id, token: token)
        if answer.status == 200 {
            logger.notice("Console: role set", metadata: ["user.id": "\(id)", "role": "\(role)", "admin.id": "\(viewer.user)"])
        }
        return passed(answer)
    }

    @Sendable func restaurants(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (_, token) = try await access.requireAdmin(request.headers)
        return passed(try await backends.restaurants(token: token))
    }

    @Sendable func order(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (_, token) = try await access.requireAdmin(request.headers)
        let id = try Self.id(in: context, of: "an order")
        return passed(try await backends.order(id, token: token))
    }

    @Sendable func notifications(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (_, token) = try await access.requireAdmin(request.headers)
        return passed(try await backends.notifications(token: token))
    }

    @Sendable func mail(_ request: Request, context: AppRequestContext) async throws -> Response {
        let (_, token) = try await access.requireAdmin(request.headers)
        return passed(try await backends.caughtMail(token: token))
    }

    @Sendable func roads(_ request: Request, context: AppRequestContext) async throws -> Response {
        _ = try await access.requireAdmin(request.headers)
        guard let roads = ConsoleBackends.roads else {
            throw Problem(status: .internalServerError, detail: "The road fixture is missing from this build.")
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "private, max-age=3600"],
            body: .init(byteBuffer: roads)
        )
    }

    /// Who is present on a Supabase Realtime channel (`realtime:<channel>`), across the replicas:
    /// the Deliveries page's drivers on shift.
    @Sendable func presence(_ request: Request, context: AppRequestContext) async throws -> Response {
        _ = try await access.requireAdmin(request.headers)
        let channel = context.parameters.get("channel") ?? ""
        let state = realtime.changes.presenceState(of: "realtime:\(channel)")
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(
                byteBuffer: ByteBuffer(string: PhoenixMessage.json(JSONValue.object(["topic": .string("realtime:\(channel)"), "state": state])))
            )
        )
    }

    private func page(named name: String, _ request: Request) async throws -> Response {
        _ = try await access.requireAdminPage(request.headers)
        guard Self.pages.contains(name) else {
            throw Problem(status: .notFound, detail: "The console's pages: \(Self.pages.joined(separator: ", ")).")
        }
        return assets.shell(page: name)
    }

    /// `POST /console/login` (a form: email, password): signs in at auth and, for an admin, sets
    /// the cookie and goes to the Events page.
    @Sendable func signIn(_ request: Request, context: AppRequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: 16 << 10)
        let form = Self.formFields(String(buffer: body))
        guard let email = form["email"], let password = form["password"], !email.isEmpty, !password.isEmpty else {
            return assets.loginPage(message: "Enter an email and a password.", status: .badRequest)
        }
        let client = addresses.resolve(peer: context.remoteAddress, forwardedFor: request.headers[.xForwardedFor])
        let answer: (status: Int, json: [String: Any])
        do {
            answer = try await backends.signIn(email: email, password: password, clientAddress: client)
        } catch {
            logger.warning("Console sign-in: auth could not be reached", metadata: ["error": "\(error)"])
            return assets.loginPage(message: "auth cannot be reached just now; try again shortly.", status: .serviceUnavailable)
        }
        guard answer.status == 200, let token = answer.json["access_token"] as? String else {
            let reason = answer.json["msg"] as? String ?? answer.json["message"] as? String ?? "Sign-in failed."
            return assets.loginPage(message: reason, status: answer.status == 429 ? .tooManyRequests : .unauthorized)
        }
        switch await access.decide(token: token) {
        case .admin:
            let lifetime = answer.json["expires_in"] as? Int ?? 3_600
            return Response(
                status: .seeOther,
                headers: [
                    .location: "/console/events", .setCookie: ConsoleAccess.setCookie(token, lifetime: lifetime, secure: Self.isSecure(request)),
                ]
            )
        case .forbidden:
            return assets.loginPage(message: "This account is not an admin's.", status: .forbidden)
        case .signedOut, .keysUnavailable:
            return assets.loginPage(message: "The token auth issued cannot be checked just now; try again shortly.", status: .serviceUnavailable)
        }
    }

    // MARK: API helpers

    private func replay<Context: ServiceRequestContext>(
        _ request: Request,
        context: Context,
        topic name: String,
        by viewer: Viewer
    ) async throws -> Response {
        let body = try await jsonBody(request, context: context)
        let office = backends.deadLetters
        let topic: Topic
        do {
            topic = try await office.deadLetterTopic(name)
        } catch {
            throw Problem(status: .notFound, type: "unknown-topic", detail: "No dead-letter topic is called \(name.prefix(100)).")
        }
        let replay: DeadLetterOffice.Replay
        do {
            if body["all"] as? Bool == true {
                replay = try await office.replayAll(topic)
            } else if let partition = body["partition"] as? Int, let offset = body["offset"] as? Int {
                replay = try await office.replay(topic, partition: Int32(clamping: partition), offset: Int64(offset))
            } else {
                throw Problem.validation([FieldError(.body(pointer: ""), "send {\"all\":true} or {\"partition\":…,\"offset\":…}")])
            }
        } catch let failure as DeadLetterOffice.Failure {
            throw Problem(status: .conflict, type: "not-replayable", detail: failure.description)
        }
        logger.notice(
            "Console: dead letters replayed",
            metadata: ["kafka.topic": "\(topic.name)", "count": "\(replay.published.count)", "admin.id": "\(viewer.user)"]
        )
        return try await json([
            "replayed": replay.published.map {
                ["partition": $0.from.partition, "offset": $0.from.offset, "to": "\($0.to.topic)[\($0.to.partition)]@\($0.to.offset)"]
            }
        ])
    }

    /// A JSON object body; 415 for any other content type (see the type's comment), 400 when it
    /// does not parse.
    private func jsonBody<Context: ServiceRequestContext>(_ request: Request, context: Context) async throws -> [String: Any] {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            throw Problem(status: .unsupportedMediaType, type: "json-required", detail: "Send the change as application/json.")
        }
        let body = try await request.body.collect(upTo: 16 << 10)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] else {
            throw Problem(status: .badRequest, type: "malformed-json", detail: "The body is not a JSON object.")
        }
        return object
    }

    /// Runs a Kafka inspection; a cluster that does not answer is a 503.
    private func kafka<Value>(_ work: () async throws -> Value) async throws -> Value {
        do {
            return try await work()
        } catch {
            logger.warning("Console: Kafka did not answer", metadata: ["error": "\(error)"])
            throw Problem(
                status: .serviceUnavailable,
                type: "kafka-unavailable",
                detail: "Kafka did not answer: \(error)",
                headers: [.retryAfter: "5"]
            )
        }
    }

    private func json(_ object: [String: Any]) async throws -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(data: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        )
    }

    private func passed(_ answer: ConsoleBackends.Passed) -> Response {
        Response(
            status: HTTPResponse.Status(code: answer.status),
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: answer.body)
        )
    }

    /// The `id` path parameter, a UUID (`what` names it in the 422).
    private static func id(in context: some RequestContext, of what: String) throws(Problem) -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw Problem.validation([FieldError(.parameter("id"), "id: \(what) id (UUID)")])
        }
        return id
    }

    static func isSecure(_ request: Request) -> Bool {
        request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    /// The fields of an `application/x-www-form-urlencoded` body.
    static func formFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (part: Substring) in part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            if let name = parts.first { fields[decode(name)] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return fields
    }
}
