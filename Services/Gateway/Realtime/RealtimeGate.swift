import Foundation
import Identity
import KeySetClient

/// Who a realtime client is, from its access token.
struct Viewer: Sendable, Equatable {
    let user: String
    let role: String?
    /// When the token stops being valid; the connection closes then unless the client sends a
    /// fresh token (WebSocket) or reconnects (SSE).
    let expiresAt: Date

    var isAdmin: Bool { role == "admin" }

    init(_ claims: AccessTokenClaims) {
        user = claims.subject
        if case .string(let role) = claims.appMetadata["role"] { self.role = role } else { role = nil }
        expiresAt = Date(timeIntervalSince1970: TimeInterval(claims.expiresAt))
    }
}

/// Why a subscription was refused, as the client sees it in an error frame.
struct SubscriptionRefusal: Error, Equatable {
    let code: String
    let message: String

    static func unknownChannel(_ name: String) -> Self {
        .init(code: "unknown_channel", message: "No channel is called \(name.prefix(80)); use profiles, feed, me, orders:{order id} or admin.")
    }

    static func forbidden(_ channel: RealtimeChannel) -> Self {
        switch channel {
        case .admin: .init(code: "forbidden", message: "admin is only for admins.")
        default: .init(code: "forbidden", message: "\(channel) is only for the order's customer, driver, restaurant and admins.")
        }
    }
}

/// Authenticates realtime clients and decides their subscriptions.
struct RealtimeGate: Sendable {
    let keys: KeySetCache
    let orders: OrderDirectory
    /// Every session's user, to close a deleted account's at once.
    let sessions = LiveSessions()

    func viewer(token: String) async throws(AccessTokenError) -> Viewer {
        Viewer(try await keys.verify(token))
    }

    /// The channel `name` names for `viewer`, if they may follow it.
    func channel(named name: String, for viewer: Viewer) async -> Result<RealtimeChannel, SubscriptionRefusal> {
        guard let channel = RealtimeChannel(name: name, user: viewer.user) else { return .failure(.unknownChannel(name)) }
        switch channel {
        case .order(let id) where await !orders.mayFollow(order: id, user: viewer.user, role: viewer.role):
            return .failure(.forbidden(channel))
        case .admin where !viewer.isAdmin:
            return .failure(.forbidden(channel))
        default:
            break
        }
        return .success(channel)
    }

    /// The channels of a `channels=a,b` query parameter, all decided; the first refusal wins.
    func channels(_ list: String?, for viewer: Viewer) async -> Result<Set<RealtimeChannel>, SubscriptionRefusal> {
        var channels = Set<RealtimeChannel>()
        for name in RealtimeChannel.names(in: list) {
            switch await channel(named: name, for: viewer) {
            case .success(let channel): channels.insert(channel)
            case .failure(let refusal): return .failure(refusal)
            }
        }
        return .success(channels)
    }
}
