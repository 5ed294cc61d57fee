import Foundation
import Logging
import ServiceKit
import Testing

@Suite("Log lines")
struct LogFormatTests {
    /// Runs `body` with a log output writing into a temporary file; returns the file's lines.
    private func capture(_ body: (LogOutput) -> Void) throws -> [String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        body(try LogOutput(copying: handle.fileDescriptor))
        try handle.close()
        return try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func jsonFormatWritesOneParseableObjectPerLine() throws {
        let lines = try capture { output in
            let factory = LogSettings(format: .json, level: .info).makeHandlerFactory(output: output)
            var logger = Logger(label: "auth") { factory($0, nil) }
            logger[metadataKey: "request_id"] = "req-7"
            logger.info("request", metadata: ["status": .stringConvertible(200), "path": "/v1/\"quoted\"\nline", "message": "shadowed"])
            logger.debug("not at this level")
        }
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "auth")
        #expect(object["message"] as? String == "request")
        #expect(object["request_id"] as? String == "req-7")
        #expect(object["status"] as? Int == 200)
        #expect(object["path"] as? String == "/v1/\"quoted\"\nline")
        #expect(object["meta.message"] as? String == "shadowed")
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
    }

    @Test func textFormatIsReadableAndColouredOnlyWhenAsked() throws {
        let plain = try capture { output in
            let factory = LogSettings(format: .text, level: .info, color: .never).makeHandlerFactory(output: output)
            Logger(label: "auth") { factory($0, nil) }.warning("slow query", metadata: ["duration_ms": "812", "table": "users"])
        }
        #expect(plain.count == 1)
        #expect(plain[0].hasSuffix(" WARN auth: slow query duration_ms=812 table=users"))
        #expect(!plain[0].contains("\u{1B}["))

        let colored = try capture { output in
            let factory = LogSettings(format: .text, level: .info, color: .always).makeHandlerFactory(output: output)
            Logger(label: "auth") { factory($0, nil) }.error("failed")
        }
        #expect(colored[0].contains("\u{1B}[31mERROR\u{1B}[0m"))
    }

    @Test func anOutputKeepsWritingToItsFileAfterItsOwnerClosedIt() throws {
        let files = (0..<2).map { _ in FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)") }
        for file in files { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        defer { for file in files { try? FileManager.default.removeItem(at: file) } }
        let owner = try FileHandle(forWritingTo: files[0])
        let output = try LogOutput(copying: owner.fileDescriptor)
        try owner.close()
        // Opened next, it usually gets the number just closed: a logger writing to that number
        // would write into it.
        let next = try FileHandle(forWritingTo: files[1])
        defer { try? next.close() }
        output.write(line: "after the owner closed")
        #expect(try String(contentsOf: files[0], encoding: .utf8) == "after the owner closed\n")
        #expect(try String(contentsOf: files[1], encoding: .utf8) == "")
    }
}
