import Foundation

/// RFC 3339 timestamps in UTC (`2026-11-22T08:30:00.123Z`), written digit by digit after
/// `gmtime_r`: what events, API bodies (3 fractional digits) and GoTrue's answers (6) carry.
/// Foundation's format styles, and `String(format:)`, cost a large share of a feed page (40
/// timestamps) in its profile.
public enum RFC3339 {
    /// `date` in UTC with `fractionalDigits` (0–6) digits of the second (the microsecond rounded,
    /// then truncated to the digits).
    public static func format(_ date: Date, fractionalDigits: Int = 3) -> String {
        // To the nearest microsecond first: a time read from Postgres is whole microseconds in a Double.
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        // Floor division, so instants before 1970 keep a positive fraction.
        var seconds = time_t(micros / 1_000_000)
        var fraction = micros % 1_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        var utc = tm()
        gmtime_r(&seconds, &utc)
        let digits = min(max(fractionalDigits, 0), 6)
        var bytes = [UInt8]()
        bytes.reserveCapacity(27)
        func append(_ value: Int, width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        append(Int(utc.tm_year) + 1900, width: 4)
        bytes.append(UInt8(ascii: "-"))
        append(Int(utc.tm_mon) + 1, width: 2)
        bytes.append(UInt8(ascii: "-"))
        append(Int(utc.tm_mday), width: 2)
        bytes.append(UInt8(ascii: "T"))
        append(Int(utc.tm_hour), width: 2)
        bytes.append(UInt8(ascii: ":"))
        append(Int(utc.tm_min), width: 2)
        bytes.append(UInt8(ascii: ":"))
        append(Int(utc.tm_sec), width: 2)
        if digits > 0 {
            var divisor: Int64 = 1
            for _ in digits..<6 { divisor *= 10 }
            bytes.append(UInt8(ascii: "."))
            append(Int(fraction / divisor), width: digits)
        }
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }
}
