import Contracts
import Foundation

/// Events read from their schema's example (`Shared/Contracts/Schemas/<type>.example.json`) for
/// replaying into a running service. Every UUID in an example is swapped for a fresh one, the same
/// fresh one wherever it recurs across the examples read through one `EventExamples` (a user
/// registered and then renamed stays one user), so replays never meet another test's rows.
package struct EventExamples {
    private var fresh: [String: String] = [:]

    package init() {}

    /// `Event`'s example with fresh ids, and `replacing`'s texts replaced (a photo the test's fake
    /// catalog has, say).
    package mutating func example<Event: DomainEvent>(_: Event.Type, replacing: [String: String] = [:]) throws -> Event {
        var text = try String(contentsOf: EventSchemaCheck.schemas.appendingPathComponent("\(Event.type).example.json"), encoding: .utf8)
        for (old, new) in replacing { text = text.replacingOccurrences(of: old, with: new) }
        let pattern = try NSRegularExpression(pattern: "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
        let ids = Set(pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) })
        for id in ids {
            let new = fresh[id] ?? UUID().uuidString.lowercased()
            fresh[id] = new
            text = text.replacingOccurrences(of: id, with: new)
        }
        return try EventJSON.decoder.decode(Event.self, from: Data(text.utf8))
    }
}
