import HTTPTypes
import Synchronization

/// Makes request ids: 128 bits written as a lowercase UUID (version 4 layout), a random
/// per-process half and a counter, so that making one costs no system call. (Foundation's
/// `UUID()` opens, reads and closes /dev/urandom each time: three system calls per request.)
///
/// Request ids correlate log lines across services; they are unique, not secret.
package enum RequestIDGenerator {
    private static let processHalf = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    /// The caller's `X-Request-Id` when it is safe to echo and log (1–128 visible ASCII
    /// characters), otherwise a new id.
    package static func id(for headers: HTTPFields) -> String {
        id(requested: headers[.requestID])
    }

    /// `requested` (a caller's `X-Request-Id`) when it is safe to echo and log, otherwise a new id.
    package static func id(requested: String?) -> String {
        if let requested, (1...128).contains(requested.utf8.count), requested.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            return requested
        }
        return next()
    }

    package static func next() -> String {
        var high = processHalf
        var low = counter.wrappingAdd(1, ordering: .relaxed).newValue
        high = (high & ~0xF000) | 0x4000  // version 4
        low = (low & ~(0b11 << 62)) | (0b10 << 62)  // RFC 9562 variant
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var index = 0
            func put(_ value: UInt64, nibbles: ClosedRange<Int>) {
                for nibble in nibbles.reversed() {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        buffer[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    buffer[index] = digits.utf8Start[Int((value >> (UInt64(nibble) * 4)) & 0xF)]
                    index += 1
                }
            }
            put(high, nibbles: 0...15)
            put(low, nibbles: 0...15)
            return index
        }
    }
}
