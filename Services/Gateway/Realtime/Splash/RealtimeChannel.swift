import Foundation
import ServiceKit

/// What a realtime client subscribes to (README, "Live events").
///
/// - `profiles`: every `auth.profile.updated.v1` (public fields only), for anyone signed in;
/// - `feed`: every post created or deleted (`social.post.created.v1`, `social.post.deleted.v1`),
///   for anyone signed in;
/// - `me`: events about the signed-in user — their render results, their orders, their social
///   activity, their own profile;
/// - `orders:{id}`: one order's status changes, driver assignment and driver positions, for its
///   customer, its driver, its restaurant and admins;
/// - `admin`: every event of every public topic, as it is (the v1 twins of tracking's events and
///   positions of drivers between orders too), for admins (the console's live pages).
enum RealtimeChannel: Hashable, Sendable, CustomStringConvertible {
    case profiles
    case feed
    /// The `me` channel of one user.
    case user(String)
    case order(String)
    case admin

    /// Reads a channel name a client sent; `me` becomes the signed-in user's channel.
    init?(name: String, user: String) {
        switch name {
        case "profiles": self = .profiles
        case "feed": self = .feed
        case "admin": self = .admin
        case "me": self = .user(user)
        default:
            guard name.hasPrefix("orders:"), let id = UUID(uuidString: String(name.dropFirst("orders:".count))) else { return nil }
            self = .order(id.lowercased)
        }
    }

    /// The channel names of a `channels=a,b` query parameter.
    static func names(in list: String?) -> [String] {
        (list ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The name a client uses for it (and the `channel` attribute of the events it carries).
    var description: String {
        switch self {
        case .profiles: "profiles"
        case .feed: "feed"
        case .user: "me"
        case .order(let id): "orders:\(id)"
        case .admin: "admin"
        }
    }
}
