import Foundation
import ServiceKit
import Testing

@Suite("JSON text Postgres cannot store")
struct JSONTextTests {
    func nul(_ text: String) -> Bool { JSONText.containsNUL(Array(text.utf8)) }

    @Test func anEscapedNULInAKeyOrAValueIsFound() {
        #expect(nul(#"{"a":"x\u0000y"}"#))
        #expect(nul(#"{"\u0000":1}"#))
        #expect(nul(#"["\n\u0000"]"#))
        #expect(nul(#"["\\\u0000"]"#), "an escaped backslash, then a NUL")
    }

    @Test func whatOnlyLooksLikeOneIsNot() {
        #expect(!nul(#"{"a":"\\u0000"}"#), "a backslash, then the text u0000")
        #expect(!nul(#"{"a":"\u0001"}"#))
        #expect(!nul(#"{"a":"\u0100 \u2000 \u000a"}"#))
        #expect(!nul(#"{"u0000":"0000"}"#))
        #expect(!nul(#"{"a":"\"#))
    }

    @Test func itAgreesWithFoundationOnGeneratedStrings() throws {
        var random = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["\u{0}", "\\", "u", "0", "a", "\"", "\n", "é"]
        for _ in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let json = try JSONEncoder().encode([text])
            #expect(JSONText.containsNUL(json) == text.contains("\u{0}"), "\(String(decoding: json, as: UTF8.self))")
        }
    }
}
