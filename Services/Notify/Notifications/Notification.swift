import Foundation

/// One thing to tell one person, before it is addressed to their devices: what a lock screen
/// shows, how APNs is to treat it, and which of the person's settings may silence it.
struct Notification: Sendable, Equatable {
    /// Which setting turns it off.
    enum Setting: String, Sendable {
        case orders, edits, likes
    }

    var recipient: UUID
    var setting: Setting
    /// What the app opens it as (`splash.type`): `order`, `offer`, `new-order`, `edit`, `post`.
    var kind: String
    /// The id the app opens (`splash.id`), lower-case.
    var subject: String
    /// What it says, put into words in each device's language when it is addressed.
    var message: Message
    /// `apns-collapse-id`: a newer notification with the same id replaces the older one.
    var collapseID: String?
    /// `apns-priority`: 10 to show at once, 5 when it may wait for the device's convenience.
    var priority: Int = 10

    /// The lock screen's words in English.
    var title: String { message.words(in: .en).title }
    var body: String { message.words(in: .en).body }

    /// The APNs payload in `language`: the alert, its sound and thread, and what the app needs to
    /// open it.
    func payload(in language: Language = .en) -> Payload {
        let words = message.words(in: language)
        return Payload(
            aps: .init(alert: .init(title: words.title, body: words.body), sound: "default", threadID: "\(kind)-\(subject)"),
            splash: .init(type: kind, id: subject)
        )
    }

    struct Payload: Codable, Sendable, Equatable {
        struct APS: Codable, Sendable, Equatable {
            struct Alert: Codable, Sendable, Equatable {
                var title: String
                var body: String
            }
            var alert: Alert
            var sound: String
            var threadID: String

            enum CodingKeys: String, CodingKey {
                case alert, sound
                case threadID = "thread-id"
            }
        }
        struct Splash: Codable, Sendable, Equatable {
            var type: String
            var id: String
        }
        var aps: APS
        var splash: Splash

        /// The JSON APNs takes (at most 4 KB: the words are bounded where they are made), the same
        /// bytes every time for the same notification.
        func json() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }
    }
}
