import Foundation
import ServiceKit
import Testing

@Suite struct UUIDLowercasedTests {
    @Test func aUUIDIsWrittenAsFoundationWritesItInLowerCase() {
        for _ in 0..<10_000 {
            let id = UUID()
            #expect(id.lowercased == id.uuidString.lowercased())
        }
        let fixed = UUID(uuidString: "00FF10AB-C0DE-4E5F-9A0B-FFFFFFFFFFFF")!
        #expect(fixed.lowercased == "00ff10ab-c0de-4e5f-9a0b-ffffffffffff")
    }
}
