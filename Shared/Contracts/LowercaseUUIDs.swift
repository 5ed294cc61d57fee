import Foundation

// Ids are written in lowercase, as Postgres, GoTrue and the schemas' examples write them, not as
// Foundation's uppercase `uuidString`: so an id reads the same in an event, a response and a row.
// Synthesized `Encodable` conformances pick these over the generic `encode`, in this module and
// in every module that imports it.
extension KeyedEncodingContainer {
    package mutating func encode(_ value: UUID, forKey key: Key) throws {
        try encode(value.uuidString.lowercased(), forKey: key)
    }

    package mutating func encodeIfPresent(_ value: UUID?, forKey key: Key) throws {
        try encodeIfPresent(value?.uuidString.lowercased(), forKey: key)
    }
}
