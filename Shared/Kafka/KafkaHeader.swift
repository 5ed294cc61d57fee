/// A Kafka record header: a name and an optional byte value.
public struct KafkaHeader: Sendable, Hashable {
    public var name: String
    public var value: [UInt8]?

    public init(_ name: String, _ value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    public init(_ name: String, _ value: String) {
        self.init(name, Array(value.utf8))
    }

    /// The value as UTF-8 text, if it has one.
    public var text: String? { value.map { String(decoding: $0, as: UTF8.self) } }
}

extension Array where Element == KafkaHeader {
    /// The value of the last header called `name` (Kafka allows repeats; the last one wins).
    public subscript(text name: String) -> String? {
        last { $0.name == name }?.text
    }
}
