import Foundation
import ServiceKit
import Testing

/// A service configuration of the usual shape.
private struct SampleConfiguration: ServiceConfiguration, Equatable {
    var http: HTTPServerSettings
    var apiKey: String
    var workers: Int
    var cacheLifetime: Duration

    init(from reader: ConfigurationReader) throws(ConfigurationError) {
        http = try HTTPServerSettings(from: reader, defaultPort: 8099)
        apiKey = try reader.string("SAMPLE_API_KEY", secret: true)
        workers = try reader.integer("SAMPLE_WORKERS", default: 2, in: 1...64)
        cacheLifetime = try reader.duration("SAMPLE_CACHE_LIFETIME", default: .seconds(600))
    }
}

@Suite("Configuration from the environment")
struct ConfigurationTests {
    @Test func readsTypedValuesAndDefaults() throws {
        let reader = ConfigurationReader([
            "SAMPLE_API_KEY": "k-123",
            "SAMPLE_WORKERS": "8",
            "SAMPLE_CACHE_LIFETIME": "1h",
            "HTTP_PORT": "9000",
            "HTTP_MAX_BODY_SIZE": "25MB",
            "HTTP_REQUEST_TIMEOUT": "250ms",
        ])
        let configuration = try SampleConfiguration(from: reader)
        #expect(configuration.apiKey == "k-123")
        #expect(configuration.workers == 8)
        #expect(configuration.cacheLifetime == .seconds(3_600))
        #expect(configuration.http.port == 9000)
        #expect(configuration.http.host == "127.0.0.1")
        #expect(configuration.http.maxBodySize == 25_000_000)
        #expect(configuration.http.requestTimeout == .milliseconds(250))
        #expect(configuration.http.shutdownGrace == .seconds(10))
        #expect(configuration.http.eventLoops == nil)
        #expect(try SampleConfiguration(from: ConfigurationReader(["SAMPLE_API_KEY": "k", "EVENT_LOOPS": "1"])).http.eventLoops == 1)
    }

    @Test func refusesAnEventLoopCountOutsideItsRange() {
        for value in ["0", "257", "all"] {
            let failure = ServiceMain.loadConfiguration(
                "sample",
                SampleConfiguration.self,
                environment: ["SAMPLE_API_KEY": "k", "EVENT_LOOPS": value]
            )
            #expect(
                failure.failureValue?.message == "sample: configuration error: EVENT_LOOPS is \"\(value)\"; expected a whole number from 1 to 256"
            )
        }
    }

    @Test func namesTheMissingVariableAndTheFormItExpects() {
        let failure = ServiceMain.loadConfiguration("sample", SampleConfiguration.self, environment: [:])
        #expect(failure.failureValue?.message == "sample: configuration error: SAMPLE_API_KEY is not set; expected a non-empty string")
        #expect(failure.failureValue?.exitStatus == 2)
    }

    @Test func showsTheOffendingValueAndTheAcceptedRange() {
        let failure = ServiceMain.loadConfiguration(
            "sample",
            SampleConfiguration.self,
            environment: ["SAMPLE_API_KEY": "k", "SAMPLE_WORKERS": "many"]
        )
        #expect(failure.failureValue?.message == "sample: configuration error: SAMPLE_WORKERS is \"many\"; expected a whole number from 1 to 64")
    }

    @Test func neverPrintsTheValueOfASecret() {
        let reader = ConfigurationReader(["DATABASE_URL": "mysql://root:hunter2@db/app"])
        #expect(throws: ConfigurationError(variable: "DATABASE_URL", expected: "an absolute URL (postgres://)", problem: .invalid(value: nil))) {
            try reader.url("DATABASE_URL", schemes: ["postgres"], secret: true)
        }
        let message = String(describing: ConfigurationError(variable: "DATABASE_URL", expected: "a postgres URL", problem: .invalid(value: nil)))
        #expect(!message.contains("hunter2"))
    }

    @Test func readsASecretFromTheVariableOrFromAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try Data("  s3cret-from-file\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        #expect(try ConfigurationReader(["KEY": "inline"]).optionalSecret("KEY", expected: "a key") == "inline")
        #expect(try ConfigurationReader(["KEY_FILE": file.path]).optionalSecret("KEY", expected: "a key") == "s3cret-from-file")
        #expect(try ConfigurationReader([:]).optionalSecret("KEY", expected: "a key") == nil)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationReader(["KEY": "inline", "KEY_FILE": file.path]).optionalSecret("KEY", expected: "a key")
        }
        #expect(throws: ConfigurationError.self) {
            try ConfigurationReader(["KEY_FILE": "/nonexistent/secret"]).optionalSecret("KEY", expected: "a key")
        }
    }

    @Test func recordsEveryVariableAServiceProcessAsksForSetOrNot() {
        let log = ConfigurationReadLog()
        let loaded = ServiceMain.loadConfiguration(
            "sample",
            SampleConfiguration.self,
            environment: ["SAMPLE_API_KEY": "k", "SPLASH_PARENT_PID": "42"],
            log: log
        )
        #expect(loaded.successValue?.parentProcess == 42)
        // Set, unset with a default, and read by the shared parts (logging, the HTTP server).
        #expect(log.namesRead.isSuperset(of: ["SAMPLE_API_KEY", "SAMPLE_WORKERS", "LOG_FORMAT", "HTTP_PORT", "EVENT_LOOPS", "SPLASH_PARENT_PID"]))
        #expect(!log.namesRead.contains("DATABASE_URL"))

        let secretLog = ConfigurationReadLog()
        _ = try? ConfigurationReader([:], log: secretLog).optionalSecret("KEY", expected: "a key")
        #expect(secretLog.namesRead == ["KEY", "KEY_FILE"])
    }

    @Test func rejectsAnUnknownLogFormat() {
        let failure = ServiceMain.loadConfiguration("sample", SampleConfiguration.self, environment: ["SAMPLE_API_KEY": "k", "LOG_FORMAT": "xml"])
        #expect(failure.failureValue?.message == "sample: configuration error: LOG_FORMAT is \"xml\"; expected one of text, json")
    }

    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)), ("30s", .seconds(30)), ("5m", .seconds(300)),
        ("1h", .seconds(3_600)), ("30d", .seconds(2_592_000)), ("1.5s", .milliseconds(1_500)), ("45", .seconds(45)),
    ])
    func parsesDurations(text: String, expected: Duration) {
        #expect(DurationFormat.parse(text) == expected)
    }

    @Test(arguments: ["", "soon", "-5s", "5 parsecs", "ms"])
    func rejectsMalformedDurations(text: String) {
        #expect(DurationFormat.parse(text) == nil)
    }

    @Test(arguments: [("512", 512), ("64KiB", 65_536), ("1MiB", 1_048_576), ("25MB", 25_000_000), ("2k", 2_048)])
    func parsesSizes(text: String, expected: Int) {
        #expect(ByteCountFormat.parse(text) == expected)
    }

    @Test(arguments: ["big", "-1", "99999999999999999999GB", "1.5MB"])
    func rejectsMalformedSizes(text: String) {
        #expect(ByteCountFormat.parse(text) == nil)
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }

    var successValue: Success? {
        try? get()
    }
}
