import ArgumentParser
import ServiceKit

/// `splash`: the operator CLI of the local stack.
@main
struct Splash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run Splash locally, without Docker.",
        discussion: "`make run` builds everything and runs `splash up`.",
        subcommands: [
            UpCommand.self, PostgresCommand.self, KafkaCommand.self, DeadLetterCommand.self, EventsCommand.self, KeysCommand.self,
            ErasureCheckCommand.self,
        ]
    )
}

/// Log lines of `splash` itself, in the services' readable format.
func bootstrapLogging() {
    LogSettings(format: .text, level: .info, color: .auto).bootstrapLoggingSystem()
}

/// The folder for local state: the Postgres cluster, secrets, the broker's address.
struct DataDirectoryOption: ParsableArguments {
    @Option(name: .long, help: "Folder for local state (Postgres data, secrets, the broker address).")
    var dataDir: String = ".data"
}

/// Writes `text` to standard output at once, in whole lines, like the children's prefixed output
/// (`print` would buffer when standard output is a pipe).
func say(_ text: String) {
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        LogOutput.standardOutput.write(line: String(line))
    }
}
