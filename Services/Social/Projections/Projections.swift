import Contracts
import EventBus
import Foundation
import Logging
import PostgresNIO

/// What social keeps of other services' data, from their events, each through the inbox (a
/// redelivered event has its effect once): people's usernames and avatars from `auth.users`, and
/// completed edits from `render.results`; and a deleted user's erasure (`UserErasure`).
struct Projections: Sendable {
    /// The projections' name in the inbox.
    static let consumer = "social-projections"
    static let topics = ConsumerGroupCatalog.socialProjections.topics
    static let registry = EventRegistry([UserRegistered.self, ProfileUpdated.self, EditCompleted.self, UserDeleted.self])

    let erasure: UserErasure
    let logger: Logger

    /// Applies one event on `connection`, inside the inbox's transaction (done for the service).
    func apply(_ event: any DomainEvent, on connection: PostgresConnection) async throws {
        switch event {
        case let registered as UserRegistered:
            try await profile(registered.userId, username: registered.username, avatarURL: nil, at: registered.registeredAt, on: connection)
        case let updated as ProfileUpdated:
            // A rename shows on every old post: the feed reads names from here.
            try await profile(updated.userId, username: updated.username, avatarURL: updated.avatarUrl, at: updated.updatedAt, on: connection)
        case let completed as EditCompleted:
            try await connection.query(
                """
                INSERT INTO edits (edit_id, user_id, format, width, height, bytes, completed_at)
                VALUES (\(completed.editId), \(completed.userId), \(completed.format.rawValue), \(completed.width), \(completed.height), \(completed.bytes), \(completed.completedAt))
                ON CONFLICT (edit_id) DO NOTHING
                """,
                logger: logger
            )
        case let deleted as UserDeleted:
            try await erasure.erase(deleted, on: connection)
        default:
            break
        }
    }

    /// Records a person's public fields, unless what is recorded is newer (events of one user
    /// arrive in order, but a replay may bring an old one again).
    private func profile(_ user: UUID, username: String?, avatarURL: String?, at time: Date, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO profiles (user_id, username, avatar_url, updated_at) VALUES (\(user), \(username), \(avatarURL), \(time))
            ON CONFLICT (user_id) DO UPDATE SET username = excluded.username, avatar_url = excluded.avatar_url, updated_at = excluded.updated_at
            WHERE profiles.updated_at <= excluded.updated_at
            """,
            logger: logger
        )
    }
}
