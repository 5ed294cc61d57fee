import AsyncHTTPClient
import Contracts
import Database
import EventBus
import Foundation
import Identity
import KeySetClient
import Logging
import NIOCore
import PostgresNIO
import RoadNetwork
import ServiceKit

/// Seeds the fixture's 350 places on an empty restaurants table: each with a menu from
/// `MenuGenerator` and an owner account made through auth's admin API (no password: an admin sets
/// one to sign in as it). Ids come from the OpenStreetMap node, so two replicas seeding at once,
/// or a seed cut short and run again, make each restaurant and account once. Each one made is
/// announced on `tracking.restaurants` as any other (`created`), so consumers know it.
struct RestaurantSeeder: Sendable {
    let client: PostgresClient
    let outbox: Outbox
    let http: HTTPClient
    let authURL: URL
    let serviceToken: String
    let logger: Logger

    struct SeedFailure: Error, CustomStringConvertible {
        var description: String
    }

    func seedIfEmpty(_ graph: RoadGraph) async throws {
        let empty = try await client.withServiceTransaction(logger: logger) { [logger] connection in
            try await connection.query("SELECT NOT EXISTS (SELECT 1 FROM restaurants)", logger: logger).collect().first(
                "whether restaurants is empty"
            ).decode(Bool.self)
        }
        guard empty else { return }
        let started = ContinuousClock.now
        // Eight accounts at a time: auth answers each in a few milliseconds, but one by one the
        // round trips add up to seconds before tracking can serve.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, place) in graph.places.enumerated() {
                if index >= 8 { try await group.next() }
                group.addTask { try await createOwner(place) }
            }
            try await group.waitForAll()
        }
        try await insertPlaces(graph)
        logger.info(
            "seeded the fixture's restaurants",
            metadata: ["count": "\(graph.places.count)", "seconds": "\((ContinuousClock.now - started).seconds)"]
        )
    }

    /// The fixture's places, each with its menu and its `tracking.restaurant.changed.v1`, in one
    /// transaction; a place already there is left as it is.
    func insertPlaces(_ graph: RoadGraph) async throws {
        try await client.withServiceTransaction(logger: logger) { [logger] connection in
            // One seeder at a time: a second replica waits here, then inserts nothing. Racing row by
            // row, the loser of a row failed on the id's unique index, which `ON CONFLICT (osm_node)`
            // did not cover (CI saw tracking stop so); `ON CONFLICT DO NOTHING` now covers both.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended('tracking.seed-restaurants', 0))", logger: logger)
            for place in graph.places {
                let menu = try String(
                    decoding: JSONEncoder().encode(MenuGenerator.menu(amenity: place.amenity, cuisine: place.cuisine, osmNode: place.osmNode)),
                    as: UTF8.self
                )
                let inserted = try await connection.query(
                    """
                    INSERT INTO restaurants (id, owner_id, osm_node, name, amenity, cuisine, address, lat, lng, menu)
                    VALUES (\(Self.restaurantID(place.osmNode)), \(Self.ownerID(place.osmNode)), \(place.osmNode), \(place.name), \(place.amenity),
                            \(place.cuisine), 'Helsinki', \(place.lat), \(place.lng), \(menu)::jsonb)
                    ON CONFLICT DO NOTHING
                    RETURNING id, owner_id, name, cuisine, is_open, version, updated_at
                    """,
                    logger: logger
                )
                for try await (id, owner, name, cuisine, isOpen, version, updatedAt) in inserted.decode(
                    (UUID, UUID, String, String?, Bool, Int, Date).self
                ) {
                    let event = RestaurantChanged(
                        restaurantId: id,
                        ownerId: owner,
                        change: .created,
                        name: name,
                        cuisine: cuisine,
                        isOpen: isOpen,
                        version: version,
                        changedAt: updatedAt
                    )
                    try await outbox.append(event, subject: event.aggregateID, on: connection, logger: logger)
                }
            }
        }
    }

    /// The owner's account; one made by an earlier seed is fine. auth may still be starting (splash
    /// up starts the services together): unreachable, it is asked again for up to a minute.
    private func createOwner(_ place: RoadGraph.Place) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                return try await askForOwner(place)
            } catch let error as HTTPClientError where ContinuousClock.now < deadline {
                logger.info("auth is not answering yet; asking again", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    private func askForOwner(_ place: RoadGraph.Place) async throws {
        var request = HTTPClientRequest(url: authURL.appendingPathComponent("auth/v1/admin/users").absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "X-Splash-Service-Token", value: serviceToken)
        let body: [String: Any] = [
            "id": Self.ownerID(place.osmNode).lowercased, "email": "owner-\(place.osmNode)@restaurants.splash.example", "email_confirm": true,
            "user_metadata": ["restaurant": place.name], "app_metadata": ["role": "restaurant"],
        ]
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        let response = try await http.execute(request, timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 64 << 10))
        guard response.status == .ok || (response.status == .unprocessableEntity && text.contains("email_exists")) else {
            throw SeedFailure(description: "auth refused the owner account of \(place.name): \(response.status.code) \(text.prefix(200))")
        }
    }

    static func restaurantID(_ node: Int64) -> UUID { UUID(derivedFrom: "splash:restaurant:\(node)") }
    static func ownerID(_ node: Int64) -> UUID { UUID(derivedFrom: "splash:restaurant-owner:\(node)") }
}
