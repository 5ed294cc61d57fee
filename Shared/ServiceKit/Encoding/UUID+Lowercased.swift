import Foundation

extension UUID {
    /// The lower-case form ids take in keys, URLs and JSON (Foundation writes upper case, through
    /// `snprintf`): written digit by digit, as the realtime feed makes several per event.
    package var lowercased: String {
        String(unsafeUninitializedCapacity: 36) { text in
            let hex: StaticString = "0123456789abcdef"
            var at = 0
            withUnsafeBytes(of: uuid) { bytes in
                hex.withUTF8Buffer { digits in
                    for (index, byte) in bytes.enumerated() {
                        if index == 4 || index == 6 || index == 8 || index == 10 {
                            text[at] = UInt8(ascii: "-")
                            at += 1
                        }
                        text[at] = digits[Int(byte >> 4)]
                        text[at + 1] = digits[Int(byte & 0x0F)]
                        at += 2
                    }
                }
            }
            return at
        }
    }
}
