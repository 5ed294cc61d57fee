import Logging

/// One JSON object per line, for log collectors:
/// `{"time":"…","level":"info","logger":"auth","message":"request","status":200,…}`.
///
/// Metadata keys sit beside the fixed keys (`time`, `level`, `logger`, `message`); a metadata key
/// that collides with a fixed key is written as `meta.<key>`.
package struct JSONLogFormat: LogLineFormat {
    private static let fixedKeys: Set<String> = ["time", "level", "logger", "message"]

    package init() {}

    package func line(label: String, event: LogEvent, metadata: Logger.Metadata) -> String {
        var line = "{\"time\":\"\(LogTimestamp.now())\",\"level\":\"\(event.level.rawValue)\""
        line += ",\"logger\":" + JSONText.quoted(label)
        line += ",\"message\":" + JSONText.quoted(event.message.description)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let name = Self.fixedKeys.contains(key) ? "meta.\(key)" : key
            line += "," + JSONText.quoted(name) + ":" + JSONText.value(value)
        }
        return line + "}"
    }
}
