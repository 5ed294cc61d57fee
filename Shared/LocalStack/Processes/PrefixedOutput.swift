import AsyncSignals
import Foundation
import ServiceKit
import Synchronization

/// Writes a child process's output line by line, each line prefixed with the child's name
/// (coloured on a terminal): `auth      | request method=GET …`.
package final class PrefixedOutput: Sendable {
    private let prefix: String
    private let output: LogOutput
    private let pending = Mutex<[UInt8]>([])

    private static let colors = ["36", "35", "33", "32", "34", "31", "96", "95", "93", "92"]

    /// - Parameters:
    ///   - colorIndex: picks the name's colour, so each child keeps its own.
    ///   - width: the name column's width, so the `|` separators line up.
    package init(name: String, colorIndex: Int, width: Int, output: LogOutput = .standardOutput) {
        let padded = name.padding(toLength: max(width, name.count), withPad: " ", startingAt: 0)
        let color = Self.colors[colorIndex % Self.colors.count]
        self.prefix = output.isTerminal ? "\u{1B}[\(color)m\(padded) |\u{1B}[0m " : "\(padded) | "
        self.output = output
    }

    /// Writes one complete line.
    package func line(_ text: String) {
        output.write(line: prefix + text)
    }

    /// Feeds bytes read from the child; complete lines are written at once.
    package func feed(_ data: Data) {
        let lines: [String] = pending.withLock { buffer in
            buffer.append(contentsOf: data)
            var lines: [String] = []
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: buffer[..<newline], as: UTF8.self))
                buffer.removeSubrange(...newline)
            }
            return lines
        }
        for line in lines { self.line(line) }
    }

    /// Writes what is left of an unterminated last line.
    package func flush() {
        let rest = pending.withLock { buffer in
            defer { buffer.removeAll() }
            return buffer
        }
        if !rest.isEmpty { line(String(decoding: rest, as: UTF8.self)) }
    }

    /// Routes `pipe`'s output here until it closes, from a thread of its own that blocks on reads.
    /// The returned one-shot completes once everything has been written.
    ///
    /// A thread per child (there are a handful) rather than `FileHandle.readabilityHandler`:
    /// that dispatch source can crash libdispatch when the pipe is released as the child exits.
    package func attach(to pipe: Pipe) -> OneShot<Void> {
        let handle = pipe.fileHandleForReading
        let drained = OneShot<Void>()
        Thread.detachNewThread { [self] in
            while true {
                let data = handle.availableData  // empty at end of file
                if data.isEmpty { break }
                feed(data)
            }
            flush()
            drained.complete(())
        }
        return drained
    }
}
