import Foundation
import Hummingbird
import KeySetClient
import PostgresNIO
import ServiceKit

/// What the console shows of notify, for admins only: the delivery log, newest first (pushes as a
/// lock screen shows them, with how each went), and the mail the catcher kept.
struct AdminController: Sendable {
    let client: PostgresClient
    let keys: KeySetCache
    let logger: Logger

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("admin/notifications", use: notifications)
            .get("admin/mail", use: mail)
    }

    static let notAdmin = Problem(status: .forbidden, type: "forbidden", title: "Forbidden", detail: "Only an admin sees notify's log")

    /// `{"items":[…]}`: the newest `limit` (1–500, default 100) deliveries.
    @Sendable func notifications(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await requireAdmin(request)
        let limit = try Self.limit(request, default: 100)
        let items = try await client.withServiceTransaction(logger: logger) { [logger] connection in
            let rows = try await connection.query(
                """
                SELECT json_build_object(
                    'id', id, 'apnsId', apns_id, 'eventId', event_id, 'eventType', event_type, 'userId', user_id,
                    'device', left(device_token, 8), 'topic', topic, 'environment', environment, 'channel', channel, 'kind', kind,
                    'collapseId', collapse_id, 'priority', priority, 'payload', payload::jsonb, 'status', status, 'attempts', attempts,
                    'apnsStatus', apns_status, 'error', error, 'createdAt', created_at, 'finishedAt', finished_at)::text
                FROM deliveries ORDER BY id DESC LIMIT \(limit)
                """,
                logger: logger
            )
            var items: [String] = []
            for try await item in rows.decode(String.self) { items.append(item) }
            return items
        }
        return Self.list(items)
    }

    /// `{"items":[…]}`: the mail the catcher kept, newest first, for one address (`to`) or all.
    @Sendable func mail(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await requireAdmin(request)
        let limit = try Self.limit(request, default: 50)
        let to: String? = request.uri.queryParameters.get("to").map { String($0) }
        let items = try await client.withServiceTransaction(logger: logger) { [logger] connection in
            let rows = try await connection.query(
                """
                SELECT json_build_object(
                    'id', mail_id, 'kind', kind, 'to', to_address, 'subject', subject, 'text', text_body, 'html', html_body,
                    'createdAt', created_at)::text
                FROM mail_outbox WHERE status = 'caught' AND (\(to)::text IS NULL OR lower(to_address) = lower(\(to)))
                ORDER BY id DESC LIMIT \(limit)
                """,
                logger: logger
            )
            var items: [String] = []
            for try await item in rows.decode(String.self) { items.append(item) }
            return items
        }
        return Self.list(items)
    }

    private func requireAdmin(_ request: Request) async throws {
        guard try await keys.caller(request.headers).role == .admin else { throw Self.notAdmin }
    }

    private static func limit(_ request: Request, default value: Int) throws -> Int {
        guard let text = request.uri.queryParameters.get("limit") else { return value }
        guard let limit = Int(text), (1...500).contains(limit) else {
            throw Problem.validation([FieldError(.parameter("limit"), "limit must be a whole number from 1 to 500")])
        }
        return limit
    }

    /// Rows already JSON, as one list.
    private static func list(_ items: [String]) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"items":["# + items.joined(separator: ",") + "]}"))
        )
    }
}
