import Foundation

/// A point on the earth (WGS 84 degrees).
package struct Coordinate: Sendable, Hashable, Codable {
    package var lat: Double
    package var lng: Double

    package init(lat: Double, lng: Double) {
        self.lat = lat
        self.lng = lng
    }

    /// Whether both values are finite and within the earth's ranges.
    package var isValid: Bool {
        lat.isFinite && lng.isFinite && (-90...90).contains(lat) && (-180...180).contains(lng)
    }

    /// The great-circle distance to `other`, in metres (haversine, mean earth radius).
    package func metres(to other: Coordinate) -> Double {
        let radians = Double.pi / 180
        let dLat = (other.lat - lat) * radians
        let dLng = (other.lng - lng) * radians
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat * radians) * cos(other.lat * radians) * sin(dLng / 2) * sin(dLng / 2)
        return 2 * 6_371_008.8 * asin(min(1, a.squareRoot()))
    }

    /// The bearing from here to `other`, degrees clockwise from north in 0..<360.
    package func bearing(to other: Coordinate) -> Double {
        let radians = Double.pi / 180
        let y = sin((other.lng - lng) * radians) * cos(other.lat * radians)
        let x = cos(lat * radians) * sin(other.lat * radians) - sin(lat * radians) * cos(other.lat * radians) * cos((other.lng - lng) * radians)
        let degrees = atan2(y, x) / radians
        return degrees < 0 ? degrees + 360 : degrees
    }

    /// The point `fraction` of the way from here to `other` (linear in degrees: fine for the
    /// few tens of metres of a road edge).
    package func interpolated(to other: Coordinate, fraction: Double) -> Coordinate {
        Coordinate(lat: lat + (other.lat - lat) * fraction, lng: lng + (other.lng - lng) * fraction)
    }
}
