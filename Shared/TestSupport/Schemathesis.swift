import Foundation
import LocalStack

/// schemathesis (PyPI; `make deps` installs it) run against a service serving on loopback: every
/// operation of its `openapi.yaml`, with positive and negative data, in all four phases (the
/// document's examples, coverage of its boundaries, fuzzing, and the stateful sequences its
/// `links` declare), under the checks a consumer relies on.
///
/// `CONTRACT_EXAMPLES` bounds the cases per operation (25 unless set) and `CONTRACT_SEED` repeats
/// a run; schemathesis prints the seed of each run, and a reproduction (`curl`) of each failure.
package struct Schemathesis: Sendable {
    /// What each response is checked for.
    package static let checks = [
        "not_a_server_error", "status_code_conformance", "content_type_conformance",
        "response_schema_conformance", "response_headers_conformance",
    ]

    package var document: URL
    package var baseURL: String
    /// Sent with every request: a token as the document's security schemes ask.
    package var headers: [(String, String)]
    /// Operations to test, as regular expressions of their paths (all when empty).
    package var includePaths: [String]
    /// Operations to leave out, as regular expressions of their paths.
    package var excludePaths: [String]
    /// Whether to run the stateful phase: false for a run whose operations the document's links
    /// do not join (schemathesis refuses a stateful phase without links).
    package var stateful: Bool
    /// `all` (valid and invalid requests), `positive` or `negative` (only requests the document
    /// says are invalid).
    package var mode: String

    /// - Parameters:
    ///   - module: the service's folder under `Services/`, whose `openapi.yaml` is read.
    ///   - baseURL: where the document's paths begin (its server's path included).
    package init(
        service module: String,
        baseURL: String,
        headers: [(String, String)] = [],
        includePaths: [String] = [],
        excludePaths: [String] = [],
        stateful: Bool = true,
        mode: String = "all"
    ) {
        document = OpenAPIDocument.root.appendingPathComponent("Services/\(module)/openapi.yaml")
        self.baseURL = baseURL
        self.headers = headers
        self.includePaths = includePaths
        self.excludePaths = excludePaths
        self.stateful = stateful
        self.mode = mode
    }

    package var arguments: [String] {
        let environment = ProcessInfo.processInfo.environment
        var arguments = [
            "-m", "schemathesis.cli", "run", document.path, "--url", baseURL,
            "--checks", Self.checks.joined(separator: ","), "--mode", mode,
            "--max-examples", environment["CONTRACT_EXAMPLES"] ?? "25",
            "--workers", "1", "--request-timeout", "20",
            "--generation-database", "none", "--no-color", "--output-truncate", "true",
            // A generator's own check (too many drawn values filtered out for an operation's
            // constraints) says nothing of the service, and failed runs by seed alone.
            "--suppress-health-check", "filter_too_much",
        ]
        if !stateful { arguments += ["--phases", "examples,coverage,fuzzing"] }
        if let seed = environment["CONTRACT_SEED"] { arguments += ["--seed", seed] }
        for (name, value) in headers { arguments += ["--header", "\(name): \(value)"] }
        for path in includePaths { arguments += ["--include-path-regex", path] }
        for path in excludePaths { arguments += ["--exclude-path-regex", path] }
        return arguments
    }

    /// Runs schemathesis to its end.
    /// - Returns: its report, whether it found failures or not.
    package func run() async throws -> Report {
        // Its reports and state go to a folder of the run's own, not the repository.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("schemathesis-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // TUS chunks (`application/offset+octet-stream`) are bytes, as `application/octet-stream` is.
        try Data(
            """
            import schemathesis
            schemathesis.serializer.alias("application/offset+octet-stream", "application/octet-stream")

            """.utf8
        ).write(to: folder.appendingPathComponent("splash_hooks.py"))
        let command = ProcessCommand(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3"] + arguments,
            environment: ["COLUMNS": "120", "NO_COLOR": "1", "PYTHONPATH": folder.path, "SCHEMATHESIS_HOOKS": "splash_hooks"],
            workingDirectory: folder
        )
        let report: Report
        do {
            report = Report(exitedCleanly: true, output: try await command.runToCompletion())
        } catch let failure as ProcessCommand.Failure {
            report = Report(exitedCleanly: false, output: failure.output)
        }
        print(
            "schemathesis on \(document.deletingLastPathComponent().lastPathComponent) at \(baseURL), \(includePaths) \(excludePaths):\n\(report.summary)"
        )
        return report
    }

    package struct Report: Sendable, CustomStringConvertible {
        /// Whether schemathesis exited with status 0 (no failure, no error).
        package var exitedCleanly: Bool
        /// schemathesis's whole output.
        package var output: String

        /// No failure, and something tested: a run that tested nothing passed nothing.
        package var passed: Bool { exitedCleanly && (generatedCases ?? 0) > 0 }

        /// The failures with their reproductions, and the summary: what a failing test prints.
        package var description: String {
            let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
            guard let start = lines.firstIndex(where: { $0.hasPrefix("=") && ($0.contains(" FAILURES ") || $0.contains(" ERRORS ")) })
            else { return output }
            return lines[start...].joined(separator: "\n")
        }

        /// What each phase did, the warnings, the counts and the seed.
        package var summary: String {
            guard let start = output.range(of: "SUMMARY") else { return output }
            return String(output[start.lowerBound...])
        }

        /// How many test cases schemathesis generated, from its summary.
        package var generatedCases: Int? {
            guard let match = output.firstMatch(of: /(\d+) generated/) else { return nil }
            return Int(match.1)
        }
    }
}
