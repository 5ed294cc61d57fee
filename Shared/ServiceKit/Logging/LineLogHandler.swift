import Logging

/// How one log event becomes one line.
package protocol LogLineFormat: Sendable {
    /// The line for `event` of logger `label`, with the merged `metadata`.
    func line(label: String, event: LogEvent, metadata: Logger.Metadata) -> String
}

/// A swift-log handler that writes each event as one line in `Format`, to a `LogOutput`.
package struct LineLogHandler<Format: LogLineFormat>: LogHandler {
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?

    private let label: String
    private let format: Format
    private let output: LogOutput

    package init(
        label: String,
        level: Logger.Level,
        format: Format,
        output: LogOutput = .standardOutput,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.logLevel = level
        self.format = format
        self.output = output
        self.metadataProvider = metadataProvider
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let merged = LogMetadata.merge(handler: metadata, provider: metadataProvider, event: event.metadata, error: event.error)
        output.write(line: format.line(label: label, event: event, metadata: merged))
    }
}
