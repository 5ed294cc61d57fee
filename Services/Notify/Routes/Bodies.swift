import Foundation
import ResourceAPI
import ServiceKit

/// `PUT /v1/devices/{token}`'s body.
struct DeviceRegistration: JSONObjectBody {
    var platform: String
    var topic: String
    var environment: DeviceEnvironment
    var locale: String

    init(reading body: inout JSONObject) throws {
        let platform = body.text("platform", required: true, maxCharacters: 16)
        let topic = body.text("topic", required: true, maxCharacters: 255, allowEmpty: false)
        let environment = body.text("environment", required: false, maxCharacters: 16)
        let locale = body.text("locale", required: false, maxCharacters: 35, allowEmpty: false)
        if let platform, platform != "ios" { body.fail("platform", "platform must be ios") }
        if let topic, !topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) {
            body.fail("topic", "topic must be the app's bundle id (letters, digits, dots and hyphens)")
        }
        if let environment, DeviceEnvironment(rawValue: environment) == nil {
            body.fail("environment", "environment must be production or sandbox")
        }
        if let locale, !locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            body.fail("locale", "locale must be a language tag such as fi-FI")
        }
        (self.platform, self.topic) = try body.validated(platform, topic)
        self.environment = environment.flatMap(DeviceEnvironment.init(rawValue:)) ?? .production
        self.locale = locale ?? "en"
    }
}

/// `PATCH /v1/notification-settings`'s body: the settings to change, the rest kept.
struct SettingsChange: JSONObjectBody {
    var orders: Bool?
    var edits: Bool?
    var likes: Bool?
    var emailReceipts: Bool?

    init(reading body: inout JSONObject) throws {
        orders = body.bool("orders", required: false)
        edits = body.bool("edits", required: false)
        likes = body.bool("likes", required: false)
        if var email = body.object("email", required: false) {
            emailReceipts = email.bool("receipts", required: false)
            body.absorb(email)
        }
        try body.validate()
    }
}

struct DeviceBody: Encodable {
    var token: String
    var platform: String
    var topic: String
    var environment: String
    var locale: String
    var registeredAt: Date
    var updatedAt: Date

    init(_ device: Device) {
        token = device.token
        platform = device.platform
        topic = device.topic
        environment = device.environment.rawValue
        locale = device.locale
        registeredAt = device.registeredAt
        updatedAt = device.updatedAt
    }
}

struct DeviceList: Encodable {
    var devices: [DeviceBody]
}

struct SettingsBody: Encodable {
    struct Email: Encodable {
        var receipts: Bool
    }
    var orders: Bool
    var edits: Bool
    var likes: Bool
    var email: Email

    init(_ settings: NotificationSettings) {
        orders = settings.orders
        edits = settings.edits
        likes = settings.likes
        email = Email(receipts: settings.emailReceipts)
    }
}
