import Contracts
import Foundation
import ServiceKit

/// Decides, from one event and what notify knows around it, who is told what: the spec's table
/// (Services/Notify/README.md, "What is sent, to whom"). Pure: the consumer looks up the facts,
/// this says what they mean, and the unit tests read it without a database.
enum NotificationPlanner {
    /// What notify's projections know of an event's order and restaurant.
    struct Facts: Sendable, Equatable {
        /// The restaurant's name, when `tracking.restaurants` has told it.
        var restaurantName: String?
        /// How many items the order holds, when its placing was seen.
        var itemCount: Int?

        init(restaurantName: String? = nil, itemCount: Int? = nil) {
            self.restaurantName = restaurantName
            self.itemCount = itemCount
        }
    }

    /// The notifications `event` makes; none for an event nobody is told of.
    static func notifications(for event: any DomainEvent, facts: Facts) -> [Notification] {
        let restaurant = facts.restaurantName ?? "The restaurant"
        switch event {
        case let placed as OrderPlaced:
            let count = placed.items.itemCount
            return [
                Notification(
                    recipient: placed.parties.restaurantOwnerId,
                    setting: .orders,
                    kind: "new-order",
                    subject: placed.orderId.lowercased,
                    title: "New order #\(placed.orderId.shortID)",
                    body: "New order #\(placed.orderId.shortID): \(items(count))",
                    collapseID: nil
                )
            ].excluding(placed.parties.customerId)
        case let assigned as DriverAssigned:
            var told = [Notification]()
            if let driver = assigned.parties.driverId {
                let what = facts.itemCount.map { "\(items($0)) from \(restaurant)" } ?? "an order from \(restaurant)"
                told.append(
                    Notification(
                        recipient: driver,
                        setting: .orders,
                        kind: "offer",
                        subject: assigned.orderId.lowercased,
                        title: "New delivery",
                        body: "New delivery: \(what)",
                        collapseID: "offer-\(assigned.orderId.lowercased)"
                    )
                )
            }
            told.append(customer(assigned.parties, order: assigned.orderId, "A driver is on the way to \(restaurant)"))
            return told
        case let arriving as OrderArriving:
            let minutes = max(1, (arriving.etaSeconds + 59) / 60)
            let away = minutes == 1 ? "about a minute away" : "about \(minutes) minutes away"
            return [customer(arriving.parties, order: arriving.orderId, "Your driver is \(away)")]
        case let changed as OrderStatusChanged:
            guard let words = customerWords(changed.status, restaurant: restaurant) else { return [] }
            return [customer(changed.parties, order: changed.orderId, words)].excluding(changed.by.userId)
        case let completed as EditCompleted:
            return [edit(completed.editId, owner: completed.userId, "Your edit is ready")]
        case let failed as EditFailed:
            return [edit(failed.editId, owner: failed.userId, "Your edit could not be rendered")]
        default:
            return []
        }
    }

    /// What a post's author is told of its likes: `liker` (their username, when notify knows it)
    /// and `others` more.
    static func likes(on post: UUID, author: UUID, liker: String?, others: Int) -> Notification {
        let who = liker ?? "Someone"
        let words =
            switch others {
            case 0: "\(who) liked your post"
            case 1: "\(who) and 1 other liked your post"
            default: "\(who) and \(others) others liked your post"
            }
        return Notification(
            recipient: author,
            setting: .likes,
            kind: "post",
            subject: post.lowercased,
            title: "SplashEdit",
            body: words,
            collapseID: "post-likes-\(post.lowercased)",
            priority: 5
        )
    }

    /// What an order's customer is told of a move to `status`; `nil` for the moves they are not
    /// (the kitchen's and the driver's steps between).
    static func customerWords(_ status: OrderStatus, restaurant: String) -> String? {
        switch status {
        case .accepted: "\(restaurant) accepted your order"
        case .rejected: "\(restaurant) could not take your order"
        case .pickedUp: "Your order is on its way"
        case .delivered: "Your order was delivered. Enjoy!"
        case .cancelled: "Your order was cancelled"
        case .placed, .preparing, .readyForPickup, .driverAssigned, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff, .arrivedAtDropoff:
            nil
        }
    }

    private static func customer(_ parties: OrderParties, order: UUID, _ words: String) -> Notification {
        Notification(
            recipient: parties.customerId,
            setting: .orders,
            kind: "order",
            subject: order.lowercased,
            title: "Your order",
            body: words,
            collapseID: "order-\(order.lowercased)"
        )
    }

    private static func edit(_ edit: UUID, owner: UUID, _ words: String) -> Notification {
        Notification(
            recipient: owner,
            setting: .edits,
            kind: "edit",
            subject: edit.lowercased,
            title: "SplashEdit",
            body: words,
            collapseID: "edit-\(edit.lowercased)"
        )
    }

    private static func items(_ count: Int) -> String {
        count == 1 ? "1 item" : "\(count) items"
    }
}

extension [Notification] {
    /// Without the notifications for `cause`: nobody is told of what they did themselves.
    fileprivate func excluding(_ cause: UUID?) -> [Notification] {
        guard let cause else { return self }
        return filter { $0.recipient != cause }
    }
}

extension UUID {
    /// The first 8 hex digits: how an order is named to people.
    fileprivate var shortID: String { String(uuidString.lowercased().prefix(8)) }
}
