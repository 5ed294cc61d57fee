import Foundation

/// A user's role, set by `auth` and carried in tokens' `app_metadata.role`.
public enum UserRole: String, Codable, Sendable, CaseIterable {
    case customer, driver, restaurant, admin
}

/// `auth.user.registered.v1`: someone signed up. No email: the topic is read by every service.
public struct UserRegistered: DomainEvent {
    public static let type = "auth.user.registered.v1"
    public static let topic = TopicCatalog.authUsers
    public var userId: UUID
    public var username: String?
    public var role: UserRole
    public var registeredAt: Date

    public init(userId: UUID, username: String?, role: UserRole, registeredAt: Date) {
        self.userId = userId
        self.username = username
        self.role = role
        self.registeredAt = registeredAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `auth.profile.updated.v1`: a user's public profile really changed (setting the same value
/// emits nothing). Carries the public fields only.
public struct ProfileUpdated: DomainEvent {
    public enum Field: String, Codable, Sendable, CaseIterable {
        case username, avatarUrl
    }

    public static let type = "auth.profile.updated.v1"
    public static let topic = TopicCatalog.authUsers
    public var userId: UUID
    public var username: String?
    public var avatarUrl: String?
    /// Which fields changed.
    public var changed: [Field]
    public var updatedAt: Date

    public init(userId: UUID, username: String?, avatarUrl: String?, changed: [Field], updatedAt: Date) {
        self.userId = userId
        self.username = username
        self.avatarUrl = avatarUrl
        self.changed = changed
        self.updatedAt = updatedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `auth.user.email-confirmed.v1`: the user proved their address with a mailed code or link (no
/// address is carried).
public struct EmailConfirmed: DomainEvent {
    public static let type = "auth.user.email-confirmed.v1"
    public static let topic = TopicCatalog.authUsers
    public var userId: UUID
    public var confirmedAt: Date

    public init(userId: UUID, confirmedAt: Date) {
        self.userId = userId
        self.confirmedAt = confirmedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `auth.user.email-changed.v1`: the account's address changed, once every mailed side of the
/// change was verified (no address is carried).
public struct EmailChanged: DomainEvent {
    public static let type = "auth.user.email-changed.v1"
    public static let topic = TopicCatalog.authUsers
    public var userId: UUID
    public var changedAt: Date

    public init(userId: UUID, changedAt: Date) {
        self.userId = userId
        self.changedAt = changedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `auth.user.onboarding-completed.v1`: the user finished the apps' onboarding flow.
public struct OnboardingCompleted: DomainEvent {
    public static let type = "auth.user.onboarding-completed.v1"
    public static let topic = TopicCatalog.authUsers
    public var userId: UUID
    public var completedAt: Date

    public init(userId: UUID, completedAt: Date) {
        self.userId = userId
        self.completedAt = completedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}

/// `auth.user.deleted.v1`: the account is gone (the person deleted it, or an admin did). Every
/// service that keeps anything of the user erases it and acknowledges on its erasures topic
/// (`ErasureAcknowledgement`). No address, no name.
public struct UserDeleted: DomainEvent {
    public static let type = "auth.user.deleted.v1"
    public static let topic = TopicCatalog.authUsers
    public var userId: UUID
    public var deletedAt: Date

    public init(userId: UUID, deletedAt: Date) {
        self.userId = userId
        self.deletedAt = deletedAt
    }

    public var aggregateID: String { userId.uuidString.lowercased() }
}
