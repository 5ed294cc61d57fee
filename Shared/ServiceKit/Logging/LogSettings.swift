import Logging

/// How a service writes its log lines.
/// Each variable is described in docs/configuration.md.
package struct LogSettings: Sendable, Equatable {
    package enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    package enum Color: String, Sendable, CaseIterable {
        case auto, always, never
    }

    package var format: Format
    package var level: Logger.Level
    package var color: Color

    package init(format: Format = .text, level: Logger.Level = .info, color: Color = .auto) {
        self.format = format
        self.level = level
        self.color = color
    }

    package init(from reader: ConfigurationReader) throws(ConfigurationError) {
        self.init(
            format: try reader.choice("LOG_FORMAT", default: .text),
            level: try reader.choice("LOG_LEVEL", default: .info),
            color: try reader.choice("LOG_COLOR", default: .auto)
        )
    }
}
