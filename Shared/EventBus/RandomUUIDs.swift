import Foundation
import Synchronization

/// Random (version 4) UUIDs for event ids, from the system's random source read 4 KiB at a time:
/// `UUID()` asks the kernel for every one, which a service publishing driver positions does
/// tens of thousands of times a second. Each id is as random as `UUID()`'s.
enum RandomUUIDs {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4_096)
        var next = 4_096
    }

    private static let pool = Mutex(Pool())

    static func next() -> UUID {
        var raw: uuid_t = pool.withLock { pool in
            if pool.next + 16 > pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes { buffer in
                    var generator = SystemRandomNumberGenerator()
                    fill(buffer, using: &generator)
                }
                pool.next = 0
            }
            defer { pool.next += 16 }
            return pool.bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: pool.next, as: uuid_t.self) }
        }
        raw.6 = (raw.6 & 0x0F) | 0x40  // version 4
        raw.8 = (raw.8 & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(uuid: raw)
    }

    /// The system's random source, kept open.
    private static let source = FileHandle(forReadingAtPath: "/dev/urandom")

    /// Fills `buffer` with random bytes: one read of `/dev/urandom` where there is one.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer, using generator: inout SystemRandomNumberGenerator) {
        if let source, let data = try? source.read(upToCount: buffer.count), data.count == buffer.count {
            data.copyBytes(to: buffer)
            return
        }
        for offset in stride(from: 0, to: buffer.count, by: 8) {
            buffer.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self)
        }
    }
}
