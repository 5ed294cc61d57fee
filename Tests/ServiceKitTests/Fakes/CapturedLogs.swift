import Logging
import Synchronization

/// Log events captured in memory, to check what a request logged.
final class CapturedLogs: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    var all: [Entry] { entries.withLock { $0 } }

    func logger(label: String = "tiny") -> Logger {
        Logger(label: label) { _ in CapturingHandler(sink: self) }
    }

    fileprivate func append(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
    }
}

private struct CapturingHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        sink.append(.init(level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
    }
}
