import Logging

/// Readable log lines for development:
/// `2026-11-22T10:15:30.123Z  INFO auth: request method=GET path=/healthz status=200`,
/// with the level and metadata keys coloured when `colored` is set.
package struct TextLogHandler: LogHandler {
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?

    private let label: String
    private let colored: Bool
    private let output: LogOutput

    package init(label: String, level: Logger.Level, colored: Bool, output: LogOutput = .standardOutput, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.logLevel = level
        self.colored = colored
        self.output = output
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var line = LogTimestamp.now()
        line += " "
        line += paint(Self.levelName(event.level), Self.levelColor(event.level))
        line += " \(label): \(event.message)"
        let merged = LogMetadata.merge(handler: metadata, provider: metadataProvider, event: event.metadata, error: event.error)
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += " " + paint(key + "=", "2") + LogMetadata.text(value)
        }
        output.write(line: line)
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
