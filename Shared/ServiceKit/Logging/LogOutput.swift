import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where log lines go: one `write(2)` per line under a lock, so lines from concurrent tasks never
/// interleave.
///
/// An output made for a file writes to a copy of the descriptor it was given, its own, closed when
/// the output is released. Loggers (a client's background activity, a library's threads) can log
/// after their owner closed the file; with the descriptor number alone, those lines would go to
/// whatever the process opened under that number next, a socket say, in the middle of its traffic.
package final class LogOutput: Sendable {
    /// Standard output, shared by every handler of the process (never closed).
    package static let standardOutput = LogOutput(descriptor: STDOUT_FILENO, owned: false)

    private let fileDescriptor: Int32
    private let owned: Bool
    private let lock = Mutex<Void>(())

    /// Writes to the file `descriptor` is open on, through a copy of it; the caller may close
    /// `descriptor` whenever it likes.
    /// - Throws: `LogOutput.CopyFailed` when the process has no descriptor left for the copy.
    package convenience init(copying descriptor: Int32) throws(CopyFailed) {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw CopyFailed(code: errno) }
        self.init(descriptor: copy, owned: true)
    }

    private init(descriptor: Int32, owned: Bool) {
        self.fileDescriptor = descriptor
        self.owned = owned
    }

    deinit {
        if owned { close(fileDescriptor) }
    }

    package struct CopyFailed: Error, CustomStringConvertible {
        package var code: Int32
        package var description: String { "cannot copy a log file's descriptor: \(String(cString: strerror(code)))" }
    }

    /// Whether the output is a terminal (and so may be coloured).
    package var isTerminal: Bool { isatty(fileDescriptor) == 1 }

    /// Writes `line` followed by a newline.
    package func write(line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { systemWrite(fileDescriptor, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // Nowhere left to report a failing log sink.
                }
                offset += written
            }
        }
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif

/// UTC timestamps in RFC 3339 form with milliseconds, e.g. `2026-11-22T10:15:30.123Z`.
package enum LogTimestamp {
    package static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let milliseconds = Int(spec.tv_nsec) / 1_000_000
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T"
            + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(milliseconds, width: 3))Z"
    }

    private static func pad(_ value: some BinaryInteger, width: Int = 2) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
