import Foundation
import ServiceKit

/// A temporary file that collects what a test's subject writes (a child process's output, log
/// lines), read back as text; removed when released.
package final class CapturedOutput: Sendable {
    package let url: URL
    /// For a child process's `standardOutput` / `standardError`.
    package let handle: FileHandle
    /// For ServiceKit's line writers.
    package let output: LogOutput

    package init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("captured-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        handle = try FileHandle(forWritingTo: url)
        output = try LogOutput(copying: handle.fileDescriptor)
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(at: url)
    }

    package var text: String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }

    package var lines: [String] { text.split(separator: "\n").map(String.init) }
}
