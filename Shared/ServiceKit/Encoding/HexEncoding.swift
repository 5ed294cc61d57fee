extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each (digests, signatures, generated secrets).
    package var hexEncoded: String {
        var text = ""
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(Self.digits[Int(byte >> 4)])
            text.append(Self.digits[Int(byte & 0x0F)])
        }
        return text
    }

    private static var digits: [Character] { Array("0123456789abcdef") }
}
