import ServiceKit
import Testing

@Suite("Hex encoding")
struct HexEncodingTests {
    @Test func bytesBecomeTwoLowerCaseDigitsEach() {
        #expect([UInt8]().hexEncoded == "")
        #expect([0x00, 0x0f, 0xab, 0xff].hexEncoded == "000fabff")
        #expect((0...255).map(UInt8.init).hexEncoded.count == 512)
    }
}
