import Foundation
import FuzzDriver
import HTTPEdge
import NIOCore

// libFuzzer target (`make test-fuzz`): the gateway's proxy reads every request's head and body
// framing itself, before any HTTP parser of SwiftNIO's (`MessageHead`, `ClientRequest` and
// `ChunkedBodyScanner`, from the HTTPEdge library the gateway reads with). Over any bytes a client
// sends, it finds a head, asks for more or refuses it, reads the request from it, and finds where
// a chunked body ends, counting its data — never a crash, a trap or a hang. What it finds reads
// back whole: the data counted is the data handed out, within the bytes scanned.

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
        guard let request = ClientRequest(head) else { return 0 }
        precondition(request.path.count <= request.target.count)
        switch request.body {
        case .none:
            continue
        case .length(let length):
            guard buffer.readableBytes >= length else { return 0 }
            buffer.moveReaderIndex(forwardBy: length)
        case .chunked:
            // The body as it would come, in reads of a few sizes.
            var scanner = ChunkedBodyScanner()
            var handedOut = 0
            while buffer.readableBytes > 0 {
                let piece = buffer.getSlice(at: buffer.readerIndex, length: min(buffer.readableBytes, 1 + buffer.readableBytes % 7))!
                guard
                    let scan = try? scanner.scan(
                        piece,
                        onData: { range in
                            precondition(range.lowerBound >= 0 && range.upperBound <= piece.readableBytes)
                            handedOut += range.count
                        }
                    )
                else { return 0 }
                precondition(scan.count <= piece.readableBytes && (scan.ends || scan.count == piece.readableBytes))
                buffer.moveReaderIndex(forwardBy: scan.count)
                if scan.ends { break }
            }
            _ = handedOut
        }
    }
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
