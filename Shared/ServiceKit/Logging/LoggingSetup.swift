import Logging

extension LogSettings {
    /// Makes a log handler factory for these settings, writing to `output`.
    package func makeHandlerFactory(output: LogOutput = .standardOutput) -> @Sendable (String, Logger.MetadataProvider?) -> any LogHandler {
        let format = self.format
        let level = self.level
        let colored =
            switch color {
            case .always: true
            case .never: false
            case .auto: output.isTerminal
            }
        return { label, provider in
            switch format {
            case .text:
                LineLogHandler(label: label, level: level, format: TextLogFormat(colored: colored), output: output, metadataProvider: provider)
            case .json: LineLogHandler(label: label, level: level, format: JSONLogFormat(), output: output, metadataProvider: provider)
            }
        }
    }

    /// Installs these settings as the process-wide logging backend. Call once, from `main`.
    package func bootstrapLoggingSystem() {
        let factory = makeHandlerFactory()
        LoggingSystem.bootstrap({ label, provider in factory(label, provider) }, metadataProvider: nil)
    }
}
