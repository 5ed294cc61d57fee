import Foundation
import ServiceKit
import Testing

@Suite("Request ids")
struct RequestIDGeneratorTests {
    @Test func idsAreLowercaseVersion4UUIDsAndNeverRepeat() {
        let ids = (0..<100_000).map { _ in RequestIDGenerator.next() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(1_000) {
            let uuid = UUID(uuidString: id)
            #expect(uuid?.uuidString.lowercased() == id)
            let bytes = uuid.map { withUnsafeBytes(of: $0.uuid) { Array($0) } } ?? []
            #expect(bytes.count == 16 && bytes[6] >> 4 == 4 && bytes[8] >> 6 == 0b10, "\(id): version 4, RFC 9562 variant")
        }
    }
}
