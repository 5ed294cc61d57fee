import Foundation

/// A fact one service publishes for others: its payload is the `Codable` value itself.
///
/// `type` is the CloudEvents `ce_type`, `<service>.<aggregate>.<what happened>.v<N>`; a new
/// version of an event is a new type with its own schema (`Shared/Contracts/Schemas`), published
/// beside the old one until no consumer needs it.
public protocol DomainEvent: Codable, Sendable, Equatable {
    static var type: String { get }
    /// The topic the event is published to.
    static var topic: Topic { get }
    /// The Kafka key, which keeps one aggregate's events in order: a user, an edit, an order.
    var aggregateID: String { get }
}

/// How event payloads are written and read: camelCase keys as declared, sorted for stable bytes,
/// dates as RFC 3339 UTC with milliseconds (fractional seconds optional when reading).
public enum EventJSON {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatTimestamp(date))
        }
        return encoder
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 timestamp: \(text)")
            }
            return date
        }
        return decoder
    }()

    /// `2026-11-22T08:30:00.123Z`.
    public static func formatTimestamp(_ date: Date) -> String {
        RFC3339.format(date)
    }

    /// Parses RFC 3339 timestamps with or without fractional seconds, in any offset.
    public static func parseTimestamp(_ text: String) -> Date? {
        if let date = try? Date(
            text,
            strategy: .iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon).timeZone(
                separator: .colon
            )
        ) {
            return date
        }
        return try? Date(text, strategy: .iso8601)
    }
}
