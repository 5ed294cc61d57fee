import Foundation
import PostgresNIO

/// A restaurant as the API shows it.
struct Restaurant: Encodable, Sendable, Equatable {
    struct Location: Codable, Sendable, Equatable {
        var lat: Double
        var lng: Double
    }

    var id: UUID
    var ownerId: UUID
    var name: String
    var cuisine: String?
    var address: String
    var location: Location
    var imageUrl: String?
    /// Opening hours as the owner gave them; `null` is always open.
    var openingHours: [String: String]?
    var isOpen: Bool
    var menu: [MenuItem]
    var version: Int
    var createdAt: Date
    var updatedAt: Date
    /// With `near`: how far it is from there, in metres.
    var distanceM: Int?

    static let columns =
        "id, owner_id, name, cuisine, address, lat, lng, image_url, opening_hours::text, is_open, menu::text, version, created_at, updated_at"

    init(row: PostgresRow, distance: Double? = nil) throws {
        let (id, owner, name, cuisine, address, lat, lng, image, hours, isOpen, menu, version, created, updated) =
            try row.decode((UUID, UUID, String, String?, String, Double, Double, String?, String?, Bool, String, Int, Date, Date).self)
        self.id = id
        ownerId = owner
        self.name = name
        self.cuisine = cuisine
        self.address = address
        location = Location(lat: lat, lng: lng)
        imageUrl = image
        openingHours = try hours.map { try JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
        self.isOpen = isOpen
        self.menu = try JSONDecoder().decode([MenuItem].self, from: Data(menu.utf8))
        self.version = version
        createdAt = created
        updatedAt = updated
        distanceM = distance.map { Int($0.rounded()) }
    }

}
