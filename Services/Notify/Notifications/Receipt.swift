import Contracts
import Foundation
import Mail
import ServiceKit

/// The mail a customer gets when an order is delivered (unless their `email.receipts` is off):
/// what they ordered at what price, the total, and when it was placed and delivered. Addressed to
/// the user, whose address is looked up when it is sent.
struct Receipt: Sendable, Equatable {
    var order: UUID
    var customer: UUID
    var restaurant: String?
    var items: [OrderItem]
    var totalCents: Int
    var placedAt: Date?
    var deliveredAt: Date

    /// The mail, its id derived from the event that delivered the order (so it is one mail).
    func mail(id: UUID) -> OutgoingMail {
        let from = restaurant ?? "the restaurant"
        let number = String(order.lowercased.prefix(8))
        var text = ["Thanks for your order from \(from).", "", "Order #\(number)"]
        if let placedAt { text.append("Placed: \(Self.time(placedAt))") }
        text.append("Delivered: \(Self.time(deliveredAt))")
        text.append("")
        for item in items {
            text.append("\(item.quantity) × \(item.name)  \(Self.euros(item.quantity * item.unitPriceCents))")
        }
        text.append("Total  \(Self.euros(totalCents))")

        var html = "<h1>Thanks for your order from \(Self.escaped(from))</h1><p>Order #\(number)<br>"
        if let placedAt { html += "Placed: \(Self.time(placedAt))<br>" }
        html += "Delivered: \(Self.time(deliveredAt))</p><table>"
        for item in items {
            html += "<tr><td>\(item.quantity) × \(Self.escaped(item.name))</td><td>\(Self.euros(item.quantity * item.unitPriceCents))</td></tr>"
        }
        html += "<tr><th>Total</th><th>\(Self.euros(totalCents))</th></tr></table>"
        return OutgoingMail(
            id: id,
            kind: "receipt",
            recipient: .user(customer),
            subject: "Your receipt from \(from)",
            text: text.joined(separator: "\n"),
            html: html
        )
    }

    /// Cents as euros: `12.90 €`.
    static func euros(_ cents: Int) -> String {
        String(format: "%d.%02d €", cents / 100, abs(cents % 100))
    }

    static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: date)
    }

    /// Text for HTML: a menu item is named by its restaurant, so nothing in it is markup.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    }
}
