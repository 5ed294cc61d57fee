import Foundation
import Hummingbird
import KeySetClient
import Mail
import PostgresNIO
import ResourceAPI
import ServiceKit

/// What the console shows of notify, for admins only: the delivery log, newest first (pushes as a
/// lock screen shows them, with how each went), and the mail the catcher kept.
struct AdminController: Sendable {
    let client: PostgresClient
    let mailOutbox: MailOutbox
    let keys: KeySetCache
    let logger: Logger

    func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("admin/notifications", use: notifications)
            .get("admin/mail", use: mail)
    }

    /// `{"items":[…]}`: the newest `limit` (1–500, default 100) deliveries.
    @Sendable func notifications(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await keys.caller(request.headers).require(.admin, to: "read notify's delivery log")
        let limit = try PageRequest.limit(request, defaultLimit: 100, maxLimit: 500)
        // Each row is JSON already (its payload as sent); the list is put together around them.
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
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"items":["# + items.joined(separator: ",") + "]}"))
        )
    }

    /// `{"items":[…]}`: the mail the catcher kept, newest first, for one address (`to`) or all.
    @Sendable func mail(_ request: Request, context: AppRequestContext) async throws -> Response {
        try await keys.caller(request.headers).require(.admin, to: "read the caught mail")
        let limit = try PageRequest.limit(request, defaultLimit: 50, maxLimit: 500)
        let to: String? = request.uri.queryParameters.get("to").map { String($0) }
        return try JSONBody.response(.ok, CaughtMailList(items: try await mailOutbox.caught(to: to, limit: limit, client: client, logger: logger)))
    }
}
