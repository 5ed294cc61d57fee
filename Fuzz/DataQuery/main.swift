import DataAPI
import Foundation
import FuzzDriver

// libFuzzer target (`make test-fuzz`): any query string a client sends to `/rest/v1` parses or
// is refused with a PGRST100 — never a crash, a trap or a hang — however its selects, filters,
// logic trees, orders, ranges and percent-escapes nest.

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    _ = try? DataQuery(query: String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self))
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
