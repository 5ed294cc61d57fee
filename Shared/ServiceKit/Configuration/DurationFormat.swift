/// Parses and prints durations written as a number and a unit: `250ms`, `30s`, `5m`, `1h`, `30d`.
package enum DurationFormat {
    private static let units: [(suffix: String, seconds: Double)] = [
        ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3_600), ("d", 86_400),
    ]

    /// The duration `text` describes, or `nil`. A bare number is read as seconds.
    package static func parse(_ text: String) -> Duration? {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        for (suffix, seconds) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            // "5ms" also ends in "s"; the ordering of `units` tries "ms" first.
            guard let value = Double(number), value >= 0, value.isFinite else { continue }
            return .milliseconds(Int64((value * seconds * 1_000).rounded()))
        }
        guard let value = Double(text), value >= 0, value.isFinite else { return nil }
        return .milliseconds(Int64((value * 1_000).rounded()))
    }

    /// A short form such as `30s` or `250ms`.
    package static func format(_ duration: Duration) -> String {
        let milliseconds = duration.totalNanoseconds / 1_000_000
        if milliseconds % 86_400_000 == 0, milliseconds > 0 { return "\(milliseconds / 86_400_000)d" }
        if milliseconds % 3_600_000 == 0, milliseconds > 0 { return "\(milliseconds / 3_600_000)h" }
        if milliseconds % 60_000 == 0, milliseconds > 0 { return "\(milliseconds / 60_000)m" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000)s" }
        return "\(milliseconds)ms"
    }
}

/// Parses sizes written as bytes or with a unit: `512`, `64KiB`, `1MiB`, `25MB`, `1GB`.
package enum ByteCountFormat {
    private static let units: [(suffix: String, factor: Int)] = [
        ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30),
        ("kb", 1_000), ("mb", 1_000_000), ("gb", 1_000_000_000),
        ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1),
    ]

    /// The number of bytes `text` describes, or `nil`.
    package static func parse(_ text: String) -> Int? {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        if let bytes = Int(text), bytes >= 0 { return bytes }
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            guard let value = Int(number), value >= 0 else { return nil }
            let (bytes, overflow) = value.multipliedReportingOverflow(by: factor)
            return overflow ? nil : bytes
        }
        return nil
    }
}

extension Duration {
    /// The duration in milliseconds, for log lines.
    package var milliseconds: Double {
        Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
    }

    /// The duration in seconds, for `Date` arithmetic.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in whole nanoseconds, for APIs that take an integer count (Dispatch, NIO).
    package var totalNanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
