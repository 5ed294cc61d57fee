import Logging

/// One JSON object per line, for log collectors:
/// `{"time":"…","level":"info","logger":"auth","message":"request","status":200,…}`.
///
/// Metadata keys sit beside the fixed keys (`time`, `level`, `logger`, `message`); a metadata key
/// that collides with a fixed key is written as `meta.<key>`.
package struct JSONLogHandler: LogHandler {
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?

    private let label: String
    private let output: LogOutput
    private static let fixedKeys: Set<String> = ["time", "level", "logger", "message"]

    package init(label: String, level: Logger.Level, output: LogOutput = .standardOutput, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var line = "{\"time\":\"\(LogTimestamp.now())\",\"level\":\"\(event.level.rawValue)\""
        line += ",\"logger\":" + JSONText.quoted(label)
        line += ",\"message\":" + JSONText.quoted(event.message.description)
        let merged = LogMetadata.merge(handler: metadata, provider: metadataProvider, event: event.metadata, error: event.error)
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            let name = Self.fixedKeys.contains(key) ? "meta.\(key)" : key
            line += "," + JSONText.quoted(name) + ":" + JSONText.value(value)
        }
        line += "}"
        output.write(line: line)
    }
}
