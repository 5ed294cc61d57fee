import Contracts

/// What a notification says, before it is put into words of a language: the facts the words are
/// made of, so each device reads it in its own locale.
enum Message: Sendable, Equatable {
    /// To a restaurant's owner: a new order, named by its short id.
    case newOrder(shortID: String, items: Int)
    /// To a driver: an order assigned to them.
    case offer(restaurant: String?, items: Int?)
    /// To a customer: a driver is heading to the restaurant.
    case driverOnTheWay(restaurant: String?)
    /// To a customer: the driver is `minutes` away.
    case arriving(minutes: Int)
    /// To a customer: their order moved to `status` (only the moves they are told of).
    case order(OrderStatus, restaurant: String?)
    case editReady
    case editFailed
    /// To a post's author: `liker` (a username, when known) and `others` more liked the post.
    case likes(liker: String?, others: Int)

    /// The lock screen's title and body in `language`.
    func words(in language: Language) -> (title: String, body: String) {
        let phrases = language.phrases
        switch self {
        case .newOrder(let shortID, let items):
            return (phrases.newOrderTitle(shortID), phrases.newOrder(shortID, phrases.items(items)))
        case .offer(let restaurant, let items):
            return (phrases.offerTitle, phrases.offer(items.map(phrases.items), restaurant))
        case .driverOnTheWay(let restaurant):
            return (phrases.orderTitle, phrases.driverOnTheWay(restaurant))
        case .arriving(let minutes):
            return (phrases.orderTitle, phrases.arriving(minutes))
        case .order(let status, let restaurant):
            return (phrases.orderTitle, phrases.order(status, restaurant) ?? "")
        case .editReady:
            return ("SplashEdit", phrases.editReady)
        case .editFailed:
            return ("SplashEdit", phrases.editFailed)
        case .likes(let liker, let others):
            return ("SplashEdit", phrases.likes(liker ?? phrases.someone, others))
        }
    }

    /// Whether an order's customer is told of a move to `status` at all (not of the kitchen's and
    /// the driver's steps between).
    static func tellsCustomer(_ status: OrderStatus) -> Bool {
        Language.en.phrases.order(status, nil) != nil
    }
}

/// The languages notify words its pushes in. A device's locale picks one by its language subtag
/// (`fi-FI`, `fi_FI` and `fi` are Finnish, `sv-FI` Swedish; `DeliveryQueue.enqueue` reads it),
/// anything else English.
enum Language: String, Sendable, CaseIterable {
    case en, fi, sv

    var phrases: Phrases {
        switch self {
        case .en: .english
        case .fi: .finnish
        case .sv: .swedish
        }
    }
}

/// One language's words for every message.
struct Phrases: Sendable {
    var someone: String
    var orderTitle: String
    var offerTitle: String
    var newOrderTitle: @Sendable (_ shortID: String) -> String
    var items: @Sendable (Int) -> String
    var newOrder: @Sendable (_ shortID: String, _ items: String) -> String
    /// The restaurant is `nil` when notify does not know its name (an old event).
    var offer: @Sendable (_ items: String?, _ restaurant: String?) -> String
    var driverOnTheWay: @Sendable (_ restaurant: String?) -> String
    var arriving: @Sendable (_ minutes: Int) -> String
    /// `nil` for a move the customer is not told of.
    var order: @Sendable (_ status: OrderStatus, _ restaurant: String?) -> String?
    var editReady: String
    var editFailed: String
    var likes: @Sendable (_ liker: String, _ others: Int) -> String

    static let english = Phrases(
        someone: "Someone",
        orderTitle: "Your order",
        offerTitle: "New delivery",
        newOrderTitle: { "New order #\($0)" },
        items: { $0 == 1 ? "1 item" : "\($0) items" },
        newOrder: { "New order #\($0): \($1)" },
        offer: { items, restaurant in "New delivery: \(items ?? "an order") from \(restaurant ?? "the restaurant")" },
        driverOnTheWay: { "A driver is on the way to \($0 ?? "the restaurant")" },
        arriving: { $0 == 1 ? "Your driver is about a minute away" : "Your driver is about \($0) minutes away" },
        order: { status, restaurant in
            switch status {
            case .accepted: "\(restaurant ?? "The restaurant") accepted your order"
            case .rejected: "\(restaurant ?? "The restaurant") could not take your order"
            case .pickedUp: "Your order is on its way"
            case .delivered: "Your order was delivered. Enjoy!"
            case .cancelled: "Your order was cancelled"
            case .placed, .preparing, .readyForPickup, .driverAssigned, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff,
                .arrivedAtDropoff:
                nil
            }
        },
        editReady: "Your edit is ready",
        editFailed: "Your edit could not be rendered",
        likes: { liker, others in
            switch others {
            case 0: "\(liker) liked your post"
            case 1: "\(liker) and 1 other liked your post"
            default: "\(liker) and \(others) others liked your post"
            }
        }
    )

    static let finnish = Phrases(
        someone: "Joku",
        orderTitle: "Tilauksesi",
        offerTitle: "Uusi toimitus",
        newOrderTitle: { "Uusi tilaus #\($0)" },
        items: { $0 == 1 ? "1 tuote" : "\($0) tuotetta" },
        newOrder: { "Uusi tilaus #\($0): \($1)" },
        offer: { items, restaurant in "Uusi toimitus: \(items ?? "tilaus")" + (restaurant.map { " ravintolasta \($0)" } ?? "") },
        driverOnTheWay: { "Kuljettaja on matkalla noutamaan tilaustasi" + ($0.map { " ravintolasta \($0)" } ?? "") },
        arriving: { $0 == 1 ? "Kuljettajasi on noin minuutin päässä" : "Kuljettajasi on noin \($0) minuutin päässä" },
        order: { status, restaurant in
            switch status {
            case .accepted: "\(restaurant ?? "Ravintola") hyväksyi tilauksesi"
            case .rejected: "\(restaurant ?? "Ravintola") ei voinut ottaa tilaustasi vastaan"
            case .pickedUp: "Tilauksesi on matkalla"
            case .delivered: "Tilauksesi on toimitettu. Hyvää ruokahalua!"
            case .cancelled: "Tilauksesi peruttiin"
            case .placed, .preparing, .readyForPickup, .driverAssigned, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff,
                .arrivedAtDropoff:
                nil
            }
        },
        editReady: "Muokkauksesi on valmis",
        editFailed: "Muokkaustasi ei voitu tehdä",
        likes: { liker, others in
            switch others {
            case 0: "\(liker) tykkäsi julkaisustasi"
            case 1: "\(liker) ja 1 muu tykkäsivät julkaisustasi"
            default: "\(liker) ja \(others) muuta tykkäsivät julkaisustasi"
            }
        }
    )

    static let swedish = Phrases(
        someone: "Någon",
        orderTitle: "Din beställning",
        offerTitle: "Ny leverans",
        newOrderTitle: { "Ny beställning #\($0)" },
        items: { $0 == 1 ? "1 artikel" : "\($0) artiklar" },
        newOrder: { "Ny beställning #\($0): \($1)" },
        offer: { items, restaurant in "Ny leverans: \(items ?? "en beställning") från \(restaurant ?? "restaurangen")" },
        driverOnTheWay: { "En förare är på väg till \($0 ?? "restaurangen")" },
        arriving: { $0 == 1 ? "Din förare är ungefär en minut bort" : "Din förare är ungefär \($0) minuter bort" },
        order: { status, restaurant in
            switch status {
            case .accepted: "\(restaurant ?? "Restaurangen") har tagit emot din beställning"
            case .rejected: "\(restaurant ?? "Restaurangen") kunde inte ta emot din beställning"
            case .pickedUp: "Din beställning är på väg"
            case .delivered: "Din beställning har levererats. Smaklig måltid!"
            case .cancelled: "Din beställning har avbrutits"
            case .placed, .preparing, .readyForPickup, .driverAssigned, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff,
                .arrivedAtDropoff:
                nil
            }
        },
        editReady: "Din redigering är klar",
        editFailed: "Din redigering kunde inte göras",
        likes: { liker, others in
            switch others {
            case 0: "\(liker) gillade ditt inlägg"
            case 1: "\(liker) och 1 annan gillade ditt inlägg"
            default: "\(liker) och \(others) andra gillade ditt inlägg"
            }
        }
    )
}
