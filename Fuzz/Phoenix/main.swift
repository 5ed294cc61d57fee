import Foundation
import FuzzDriver
import Identity
import NIOCore
import RealtimeWire

// libFuzzer target (`make test-fuzz`): the gateway's readers of Supabase Realtime's WebSocket
// frames (`PhoenixMessage` and `Broadcast`, from the RealtimeWire library the gateway reads with,
// with the `ClientQueue` they write into), over any bytes a client sends: an input
// starting with byte 3 is a binary frame (a user broadcast), any other a text frame in either
// version's shape. Each is read or refused, and what is read is written back for both versions
// (a text frame reads back as the same message; a binary broadcast's kind 4 frame carries its
// event and payload) — never a crash, a trap or a hang.

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = UnsafeBufferPointer(start: start, count: count)
    if bytes.first == UserBroadcastFrame.pushKind {
        binaryFrame(ByteBuffer(bytes: bytes))
        return 0
    }
    guard let message = try? PhoenixMessage(text: String(decoding: bytes, as: UTF8.self)) else { return 0 }
    for version in [PhoenixMessage.Version.v1, .v2] {
        // What the gateway writes, it reads back as the same message.
        guard let again = try? PhoenixMessage(text: message.text(version)),
            again.joinRef == message.joinRef, again.ref == message.ref, again.topic == message.topic, again.event == message.event,
            equivalent(again.payload, message.payload)
        else { fatalError("\(version) frame did not read back: \(message)") }
    }
    return 0
}

/// Whether two JSON values say the same: a number read as a double may read back as the integer
/// it equals (5575555555555555555.2 is written 5.575555555555555e+18, which reads as an Int).
func equivalent(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(equivalent)
    case (.object(let x), .object(let y)): return x.keys == y.keys && x.allSatisfy { key, value in y[key].map { equivalent(value, $0) } ?? false }
    default: return a == b
    }
}

func binaryFrame(_ frame: ByteBuffer) {
    guard let push = try? UserBroadcastFrame.decode(frame), case .user(let event, _, let payload) = push.broadcast else { return }
    if case .binary(let written)? = push.broadcast.frame(for: .v2, topic: push.topic, joinRef: push.joinRef) {
        let view = Array(written.readableBytesView)
        guard view.count == 5 + Int(view[1]) + Int(view[2]) + payload.count, view.suffix(payload.count).elementsEqual(payload),
            view[(5 + Int(view[1]))...].prefix(Int(view[2])).elementsEqual(event.utf8)
        else { fatalError("kind 4 frame does not carry the event and payload it was given: \(push)") }
    } else {
        fatalError("a user broadcast is not binary for 2.0.0: \(push)")
    }
    if let text = push.broadcast.frame(for: .v1, topic: push.topic, joinRef: push.joinRef), case .text(let json) = text {
        guard (try? PhoenixMessage(text: json))?.event == "broadcast" else { fatalError("1.0.0 broadcast does not read back: \(json)") }
    }
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
