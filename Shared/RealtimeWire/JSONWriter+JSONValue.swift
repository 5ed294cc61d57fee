import Contracts
import Identity

extension JSONWriter {
    /// `value` byte for byte as `JSONEncoder` writes it with sorted keys and unescaped slashes
    /// (`PhoenixMessage.json`'s encoder), without the encoder's intermediate tree: a change is
    /// rendered once per event, and its frame once per client. A number that is not finite, which
    /// the encoder refuses, is written as `null`.
    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .int(let number): integer(number)
        case .double(let number): if number.isFinite { self.number(number) } else { null() }
        case .string(let text): string(text)
        case .array(let elements): array(elements) { $0.value($1) }
        case .object(let members):
            object { writer in
                for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                    writer.key(name)
                    writer.value(member)
                }
            }
        }
    }
}
