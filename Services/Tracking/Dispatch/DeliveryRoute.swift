import Contracts
import Database
import Foundation
import KeySetClient
import Logging
import PostgresNIO
import RoadNetwork

extension RoadGraph {
    /// The way left of a delivery in `status` from `position`: through the restaurant until the
    /// food is picked up, then to the dropoff.
    func deliveryRoute(from position: Coordinate, status: OrderStatus, pickup: Coordinate, dropoff: Coordinate) -> Route {
        OrderMachine.beforePickup.contains(status)
            ? route(from: position, to: pickup).followed(by: route(from: pickup, to: dropoff))
            : route(from: position, to: dropoff)
    }
}

extension Dropoff {
    var coordinate: Coordinate { Coordinate(lat: lat, lng: lng) }
}

extension PostgresConnection {
    /// Where a restaurant is: where its orders are picked up.
    func restaurantLocation(_ id: UUID, logger: Logger) async throws -> Coordinate {
        let (lat, lng) = try await query("SELECT lat, lng FROM restaurants WHERE id = \(id)", logger: logger).collect().first(
            "the restaurant's place"
        ).decode(
            (Double, Double).self
        )
        return Coordinate(lat: lat, lng: lng)
    }
}
