import Foundation
import FuzzDriver
import Identity

// libFuzzer target (`make test-fuzz`): the gateway's reader of Supabase Realtime's WebSocket text
// frames (PhoenixMessage.swift, linked here from Services/Gateway/SupabaseRealtime), both
// versions' shapes, over any text a client sends: it reads a message or refuses the frame, and
// what it reads is written back in both versions — never a crash, a trap or a hang.

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    guard let message = try? PhoenixMessage(text: String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)) else { return 0 }
    for version in [PhoenixMessage.Version.v1, .v2] {
        // What the gateway writes, it reads back as the same message.
        guard (try? PhoenixMessage(text: message.text(version))) == message else { fatalError("\(version) frame did not read back: \(message)") }
    }
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
