/// A buffer librdkafka writes an error message into (`char *errstr, size_t errstr_size`).
struct ErrorText {
    var buffer = [CChar](repeating: 0, count: 512)

    /// The message up to its terminating NUL.
    var message: String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
