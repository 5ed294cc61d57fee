import AsyncHTTPClient
import Contracts
import Foundation
import Logging
import Mail
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import ServiceKit

/// Receipts by mail: queued in the inbox's transaction of the event that delivered an order, when
/// the customer's `email.receipts` is on and notify saw the order placed (its items and prices).
struct Receipts: Sendable {
    let outbox: MailOutbox
    let logger: Logger

    /// Queues the receipt `changed` calls for, if any.
    func queue(for changed: OrderStatusChanged, occasion: Occasion, on connection: PostgresConnection) async throws {
        guard changed.status == .delivered else { return }
        let rows = try await connection.query(
            """
            SELECT coalesce((SELECT email_receipts FROM settings WHERE user_id = \(changed.parties.customerId)), true),
                   o.items::text, o.total_cents, o.placed_at,
                   (SELECT name FROM restaurants WHERE restaurant_id = \(changed.parties.restaurantId))
            FROM (SELECT 1) AS one LEFT JOIN orders o ON o.order_id = \(changed.orderId)
            """,
            logger: logger
        )
        for try await (wanted, items, total, placedAt, restaurant) in rows.decode((Bool, String?, Int?, Date?, String?).self) {
            guard wanted else { return }
            guard let items, let total else {
                logger.info("No receipt: the order was placed before notify saw it", metadata: ["order.id": "\(changed.orderId)"])
                return
            }
            let receipt = Receipt(
                order: changed.orderId,
                customer: changed.parties.customerId,
                restaurant: changed.restaurantName ?? restaurant,
                items: try EventJSON.decoder.decode([OrderItem].self, from: Data(items.utf8)),
                totalCents: total,
                placedAt: placedAt,
                deliveredAt: changed.changedAt
            )
            try await outbox.append(receipt.mail(id: occasion.id), on: connection, logger: logger)
        }
    }
}

/// Where a user's mail goes, asked of auth when a mail is sent (`GET /auth/v1/admin/users/{id}`
/// with the service token): notify keeps no address.
struct AuthDirectory: Sendable {
    let http: HTTPClient
    let authURL: URL
    let serviceToken: String
    let logger: Logger

    /// The user's address; `nil` when auth has no such user (gone) or no address for them.
    /// - Throws: when auth cannot be asked (the mail waits and is tried again).
    func address(of user: UUID) async throws -> String? {
        var request = HTTPClientRequest(url: authURL.appendingPathComponent("auth/v1/admin/users/\(user.lowercased)").absoluteString)
        request.headers.add(name: "X-Splash-Service-Token", value: serviceToken)
        let response = try await http.execute(request, timeout: .seconds(10), logger: logger)
        let body = try await response.body.collect(upTo: 1 << 20)
        switch response.status.code {
        case 200:
            struct User: Decodable { var email: String? }
            let email = try JSONDecoder().decode(User.self, from: Data(buffer: body)).email
            return email?.isEmpty == false ? email : nil
        case 404: return nil
        default: throw AuthDirectoryError(status: Int(response.status.code))
        }
    }
}

struct AuthDirectoryError: Error, CustomStringConvertible {
    var status: Int
    var description: String { "auth answered \(status) to the address lookup" }
}
