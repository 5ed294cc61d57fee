import Contracts
import EventBus
import Foundation
import Identity
import RealtimeWire
import ServiceKit

/// A row change of one of the data API's tables, as Supabase Realtime's `postgres_changes` tells
/// it, made from a domain event rather than from Postgres replication: every gateway replica reads
/// the events, and no replication slot is held. `record` carries the columns the event knows
/// (always the primary key and what changed) and `columns` names exactly those; `old_record`
/// carries the primary key.
struct TableChange: Sendable {
    enum Kind: String, Sendable {
        case insert = "INSERT"
        case update = "UPDATE"
        case delete = "DELETE"
    }

    /// Who may see the row, by the data API's row rules.
    enum Visibility: Sendable, Equatable {
        /// `profiles`: anyone, signed in or not.
        case anyone
        /// `posts`: anyone signed in.
        case signedIn
        /// Own rows (`likes`, private `collections`) or an order's parties; `admins` see them too.
        case users(Set<String>, admins: Bool)
    }

    let table: String
    let kind: Kind
    let record: [String: JSONValue]
    let oldRecord: [String: JSONValue]
    /// The columns of `record` with their Postgres types, in a stable order.
    let columns: [(name: String, type: String)]
    let commitTimestamp: Date
    let visibility: Visibility
    /// The domain event's id: a rejoining client names the last one it saw.
    let eventID: String

    /// The tables whose changes are told, and their columns' types (the data API's).
    static let columnTypes: [String: [String: String]] = [
        "profiles": ["id": "uuid", "username": "text", "avatar_url": "text", "created_at": "timestamptz"],
        "posts": ["id": "uuid", "user_id": "uuid", "caption": "text", "photo_key": "text", "created_at": "timestamptz"],
        "likes": ["user_id": "uuid", "photo_key": "text", "created_at": "timestamptz"],
        "collections": ["id": "uuid", "owner_id": "uuid", "private": "bool", "updated_at": "timestamptz"],
        "restaurants": [
            "id": "uuid", "owner_id": "uuid", "name": "text", "cuisine": "text", "is_open": "bool", "version": "int4", "updated_at": "timestamptz",
        ],
        "orders": [
            "id": "uuid", "customer_id": "uuid", "restaurant_id": "uuid", "driver_id": "uuid", "status": "text",
            "total_cents": "int4", "eta_seconds": "int4", "version": "int4", "created_at": "timestamptz", "updated_at": "timestamptz",
        ],
    ]

    /// The change `envelope` makes; `nil` for an event that changes none of these tables.
    /// - Throws: `DecodingError` when the payload does not match its type.
    init?(_ envelope: EventEnvelope) throws {
        try self.init(EventPayload(envelope))
    }

    /// The same, from a payload another reader may have read already.
    init?(_ payload: EventPayload) throws {
        let envelope = payload.envelope
        let id = envelope.id.lowercased
        switch envelope.type {
        case UserRegistered.type:
            let event = try payload.decode(UserRegistered.self)
            self.init(
                "profiles",
                .insert,
                ["id": .uuid(event.userId), "username": .optional(event.username), "created_at": .time(event.registeredAt)],
                key: ["id"],
                at: event.registeredAt,
                visibility: .anyone,
                eventID: id
            )
        case ProfileUpdated.type:
            let event = try payload.decode(ProfileUpdated.self)
            var record: [String: JSONValue] = ["id": .uuid(event.userId)]
            if event.changed.contains(.username) { record["username"] = .optional(event.username) }
            if event.changed.contains(.avatarUrl) { record["avatar_url"] = .optional(event.avatarUrl) }
            self.init("profiles", .update, record, key: ["id"], at: event.updatedAt, visibility: .anyone, eventID: id)
        case PostCreated.type:
            let event = try payload.decode(PostCreated.self)
            self.init(
                "posts",
                .insert,
                [
                    "id": .uuid(event.postId), "user_id": .uuid(event.userId), "caption": .string(event.caption),
                    "photo_key": .string(event.photoKey), "created_at": .time(event.createdAt),
                ],
                key: ["id"],
                at: event.createdAt,
                visibility: .signedIn,
                eventID: id
            )
        case PostDeleted.type:
            let event = try payload.decode(PostDeleted.self)
            self.init(
                "posts",
                .delete,
                ["id": .uuid(event.postId), "user_id": .uuid(event.userId)],
                key: ["id", "user_id"],
                at: event.deletedAt,
                visibility: .signedIn,
                eventID: id
            )
        case PhotoLiked.type:
            let event = try payload.decode(PhotoLiked.self)
            self.init(
                "likes",
                .insert,
                ["user_id": .uuid(event.userId), "photo_key": .string(event.photoId), "created_at": .time(event.likedAt)],
                key: ["user_id", "photo_key"],
                at: event.likedAt,
                visibility: .users([Self.id(event.userId)], admins: false),
                eventID: id
            )
        case PhotoUnliked.type:
            let event = try payload.decode(PhotoUnliked.self)
            self.init(
                "likes",
                .delete,
                ["user_id": .uuid(event.userId), "photo_key": .string(event.photoId)],
                key: ["user_id", "photo_key"],
                at: event.unlikedAt,
                visibility: .users([Self.id(event.userId)], admins: false),
                eventID: id
            )
        case CollectionChanged.type:
            let event = try payload.decode(CollectionChanged.self)
            let kind: Kind =
                switch event.change {
                case .created: .insert
                case .deleted: .delete
                case .updated, .added, .removed: .update
                }
            self.init(
                "collections",
                kind,
                [
                    "id": .uuid(event.collectionId), "owner_id": .uuid(event.userId), "private": .bool(event.private),
                    "updated_at": .time(event.changedAt),
                ],
                key: ["id", "owner_id"],
                at: event.changedAt,
                visibility: event.private ? .users([Self.id(event.userId)], admins: false) : .signedIn,
                eventID: id
            )
        case OrderPlaced.type:
            let event = try payload.decode(OrderPlaced.self)
            self.init(
                "orders",
                .insert,
                Self.order(event.orderId, event.parties).merging([
                    "status": .string(OrderStatus.placed.rawValue), "total_cents": .int(event.totalCents),
                    "eta_seconds": event.etaSeconds.map(JSONValue.int) ?? .null,
                    "version": .int(1), "created_at": .time(event.placedAt), "updated_at": .time(event.placedAt),
                ]) { $1 },
                key: ["id"],
                at: event.placedAt,
                visibility: Self.parties(event.parties),
                eventID: id
            )
        case OrderStatusChanged.type:
            let event = try payload.decode(OrderStatusChanged.self)
            self.init(
                "orders",
                .update,
                Self.order(event.orderId, event.parties).merging([
                    "status": .string(event.status.rawValue), "version": .int(event.version), "updated_at": .time(event.changedAt),
                ]) { $1 },
                key: ["id"],
                at: event.changedAt,
                visibility: Self.parties(event.parties),
                eventID: id
            )
        case RestaurantChanged.type:
            let event = try payload.decode(RestaurantChanged.self)
            self.init(
                "restaurants",
                event.change == .created ? .insert : .update,
                [
                    "id": .uuid(event.restaurantId), "owner_id": .uuid(event.ownerId), "name": .string(event.name),
                    "cuisine": .optional(event.cuisine),
                    "is_open": .bool(event.isOpen), "version": .int(event.version), "updated_at": .time(event.changedAt),
                ],
                key: ["id"],
                at: event.changedAt,
                visibility: .anyone,
                eventID: id
            )
        default:
            // Among them tracking's v1 twins (the v2 event tells the same change) and
            // driver-assigned, whose move to driver_assigned comes as a status change too.
            return nil
        }
    }

    private init(_ table: String, _ kind: Kind, _ record: [String: JSONValue], key: [String], at time: Date, visibility: Visibility, eventID: String)
    {
        self.table = table
        self.kind = kind
        let old = record.filter { key.contains($0.key) }
        // A deleted row has no new record: Postgres's replication sends only the old key.
        self.record = kind == .delete ? [:] : record
        self.oldRecord = old
        let types = Self.columnTypes[table] ?? [:]
        self.columns = (kind == .delete ? old : record).keys.sorted().map { ($0, types[$0] ?? "text") }
        self.commitTimestamp = time
        self.visibility = visibility
        self.eventID = eventID
    }

    /// Whether a viewer (nil: the anonymous caller) may see this row.
    func isVisible(to viewer: Viewer?) -> Bool {
        switch visibility {
        case .anyone: true
        case .signedIn: viewer != nil
        case .users(let users, let admins):
            viewer.map { users.contains($0.user) || (admins && $0.role == UserRole.admin.rawValue) } ?? false
        }
    }

    /// The row a filter is matched against: the new one, or the old key of a deleted row.
    var filterable: [String: JSONValue] { kind == .delete ? oldRecord : record }

    /// `payload.data` of the `postgres_changes` message, rendered once for every client.
    /// `event_id` is not Supabase's: the event it came from, for a rejoin that should miss nothing.
    var dataJSON: String {
        PhoenixMessage.json(
            JSONValue.object([
                "schema": "public", "table": .string(table), "type": .string(kind.rawValue), "commit_timestamp": .time(commitTimestamp),
                "columns": .array(columns.map { .object(["name": .string($0.name), "type": .string($0.type)]) }),
                "record": .object(record), "old_record": .object(oldRecord), "errors": .null, "event_id": .string(eventID),
            ])
        )
    }

    private static func order(_ id: UUID, _ parties: OrderParties) -> [String: JSONValue] {
        [
            "id": .uuid(id), "customer_id": .uuid(parties.customerId), "restaurant_id": .uuid(parties.restaurantId),
            "driver_id": parties.driverId.map(JSONValue.uuid) ?? .null,
        ]
    }

    private static func parties(_ parties: OrderParties) -> Visibility {
        .users(Set(parties.people.map(id)), admins: true)
    }

    private static func id(_ uuid: UUID) -> String { uuid.lowercased }
}
