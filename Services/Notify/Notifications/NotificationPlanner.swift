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
        let restaurant = facts.restaurantName
        switch event {
        case let placed as OrderPlaced:
            let count = placed.items.itemCount
            return [
                Notification(
                    recipient: placed.parties.restaurantOwnerId,
                    setting: .orders,
                    kind: "new-order",
                    subject: placed.orderId.lowercased,
                    message: .newOrder(shortID: placed.orderId.shortID, items: count),
                    collapseID: nil
                )
            ].excluding(placed.parties.customerId)
        case let assigned as DriverAssigned:
            var told = [Notification]()
            if let driver = assigned.parties.driverId {
                told.append(
                    Notification(
                        recipient: driver,
                        setting: .orders,
                        kind: "offer",
                        subject: assigned.orderId.lowercased,
                        message: .offer(restaurant: restaurant, items: facts.itemCount),
                        collapseID: "offer-\(assigned.orderId.lowercased)"
                    )
                )
            }
            told.append(customer(assigned.parties, order: assigned.orderId, .driverOnTheWay(restaurant: restaurant)))
            return told
        case let arriving as OrderArriving:
            let minutes = max(1, (arriving.etaSeconds + 59) / 60)
            return [customer(arriving.parties, order: arriving.orderId, .arriving(minutes: minutes))]
        case let changed as OrderStatusChanged:
            guard Message.tellsCustomer(changed.status) else { return [] }
            return [customer(changed.parties, order: changed.orderId, .order(changed.status, restaurant: restaurant))]
                .excluding(changed.by.userId)
        case let completed as EditCompleted:
            return [edit(completed.editId, owner: completed.userId, .editReady)]
        case let failed as EditFailed:
            return [edit(failed.editId, owner: failed.userId, .editFailed)]
        default:
            return []
        }
    }

    /// What a post's author is told of its likes: `liker` (their username, when notify knows it)
    /// and `others` more.
    static func likes(on post: UUID, author: UUID, liker: String?, others: Int) -> Notification {
        Notification(
            recipient: author,
            setting: .likes,
            kind: "post",
            subject: post.lowercased,
            message: .likes(liker: liker, others: others),
            collapseID: "post-likes-\(post.lowercased)",
            priority: 5
        )
    }

    private static func customer(_ parties: OrderParties, order: UUID, _ message: Message) -> Notification {
        Notification(
            recipient: parties.customerId,
            setting: .orders,
            kind: "order",
            subject: order.lowercased,
            message: message,
            collapseID: "order-\(order.lowercased)"
        )
    }

    private static func edit(_ edit: UUID, owner: UUID, _ message: Message) -> Notification {
        Notification(
            recipient: owner,
            setting: .edits,
            kind: "edit",
            subject: edit.lowercased,
            message: message,
            collapseID: "edit-\(edit.lowercased)"
        )
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
