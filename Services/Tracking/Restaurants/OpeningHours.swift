import Foundation

/// A restaurant's opening hours: by day (`mon` … `sun`), one or more ranges of Helsinki time,
/// `"10-22"`, `"11:30-14:00,17-23"`; a range past midnight (`"18-02"`) runs into the next day. A
/// day not listed is closed; no hours at all (`null`) is always open.
enum OpeningHours {
    static let days = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    static let zone = TimeZone(identifier: "Europe/Helsinki")!

    /// Minutes from midnight of each range of `text`, or nil when it is not such a list.
    static func ranges(_ text: String) -> [(open: Int, close: Int)]? {
        var ranges: [(Int, Int)] = []
        for part in text.split(separator: ",") {
            let ends = part.split(separator: "-").map { $0.trimmingCharacters(in: .whitespaces) }
            guard ends.count == 2, let open = minutes(ends[0]), let close = minutes(ends[1]) else { return nil }
            ranges.append((open, close))
        }
        return ranges.isEmpty ? nil : ranges
    }

    private static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard (1...2).contains(parts.count), let hours = Int(parts[0]), (0...24).contains(hours) else { return nil }
        let minutes = parts.count == 2 ? Int(parts[1]) : 0
        guard let minutes, (0..<60).contains(minutes), hours * 60 + minutes <= 24 * 60 else { return nil }
        return hours * 60 + minutes
    }

    /// Whether a restaurant with `hours` is open at `date`.
    static func isOpen(_ hours: [String: String]?, at date: Date) -> Bool {
        guard let hours else { return true }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        let weekday = (parts.weekday ?? 1) - 1
        let now = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        // Today's ranges, and yesterday's that run past midnight.
        if let today = hours[days[weekday]].flatMap(ranges),
            today.contains(where: { $0.open <= $0.close ? ($0.open...$0.close - 1).contains(now) : now >= $0.open })
        {
            return true
        }
        if let yesterday = hours[days[(weekday + 6) % 7]].flatMap(ranges), yesterday.contains(where: { $0.open > $0.close && now < $0.close }) {
            return true
        }
        return false
    }
}
