import Logging

/// Readable lines for development:
/// `2026-11-22T10:15:30.123Z  INFO auth: request method=GET path=/healthz status=200`,
/// with the level and metadata keys coloured when `colored` is set.
package struct TextLogFormat: LogLineFormat {
    package var colored: Bool

    package init(colored: Bool) {
        self.colored = colored
    }

    package func line(label: String, event: LogEvent, metadata: Logger.Metadata) -> String {
        var line = LogTimestamp.now() + " " + paint(Self.levelName(event.level), Self.levelColor(event.level))
        line += " \(label): \(event.message)"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " " + paint(key + "=", "2") + LogMetadata.text(value)
        }
        return line
    }

    private func paint(_ text: String, _ code: String) -> String {
        colored ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    private static func levelName(_ level: Logger.Level) -> String {
        switch level {
        case .trace: "TRACE"
        case .debug: "DEBUG"
        case .info: " INFO"
        case .notice: "NOTICE"
        case .warning: " WARN"
        case .error: "ERROR"
        case .critical: " CRIT"
        }
    }

    private static func levelColor(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug: "2"
        case .info: "32"
        case .notice: "36"
        case .warning: "33"
        case .error: "31"
        case .critical: "1;31"
        }
    }
}
