import Foundation
import FuzzDriver
import Imaging

// libFuzzer target (`make test-fuzz`): whatever bytes an upload holds, the checks before any
// decoding (the signature, the size, libvips's reading of the JPEG/PNG/WebP header, the declared
// pixels) answer or throw — never crash, trap or hang.
enum Target {
    static let limits = SourceLimits(maxBytes: 1 << 20, maxPixels: 4_000_000)
}

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    _ = try? SourceInspection.inspect(Array(UnsafeBufferPointer(start: start, count: count)), limits: Target.limits)
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
