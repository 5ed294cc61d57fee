import Foundation
import FuzzDriver
import NIOCore

// libFuzzer target (`make test-fuzz`): the gateway's direct path reads every request's head
// itself, before any HTTP parser of SwiftNIO's (MessageHead.swift, linked here from
// Services/Gateway/Proxy). Over any bytes a client sends, it finds a head, asks for more or hands
// the connection over — never a crash, a trap or a hang — and what it found reads back whole.

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    var buffer = ByteBuffer(bytes: UnsafeBufferPointer(start: start, count: count))
    while case .head(let head) = MessageHead.take(from: &buffer) {
        _ = (head.contentLength, head.connectionOptions, head.combined(.host), head.count(.transferEncoding))
        for field in head.fields { _ = (head.string(field.name), head.string(field.value)) }
        var forwarded = ByteBuffer()
        head.writeEndToEndFields(to: &forwarded, dropping: [.authorization])
    }
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
