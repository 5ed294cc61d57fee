import Foundation
import ServiceKit

/// A log output backed by a temporary file, for reading back what was written.
final class OutputFile: Sendable {
    let url: URL
    let output: LogOutput
    private let handle: FileHandle

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("output-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        handle = try FileHandle(forWritingTo: url)
        output = LogOutput(fileDescriptor: handle.fileDescriptor)
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(at: url)
    }

    var lines: [String] {
        ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
