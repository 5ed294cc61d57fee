/// The hex digits, as ASCII bytes.
private let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each (digests, signatures, generated secrets).
    package var hexEncoded: String {
        let bytes = Array(self)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = hexDigits[Int(byte >> 4)]
                buffer[2 * index + 1] = hexDigits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }
}
