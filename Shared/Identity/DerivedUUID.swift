import Crypto
import Foundation

extension UUID {
    /// A UUID (version 4 layout) from the first bytes of `name`'s SHA-256: the same name gives the
    /// same id, on every replica and every run (seeded rows, a push made once however often its
    /// making is tried).
    package init(derivedFrom name: String) {
        var bytes = Array(SHA256.hash(data: Data(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        self.init(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            )
        )
    }
}
