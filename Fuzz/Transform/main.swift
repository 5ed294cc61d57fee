import Foundation
import FuzzDriver
import Imaging

// libFuzzer target (`make test-fuzz`): whatever bytes an upload holds, Storage's image
// transformation of it — the header's checks, libjpeg-turbo's decode straight into memory (or
// libvips' for any other file), the resize, the crop, the encode — answers a tile or throws;
// never crashes, traps, leaks memory safety or hangs. The limits keep each input's pixels small.
enum Target {
    static let limits = SourceLimits(maxBytes: 1 << 20, maxPixels: 4_000_000)
    /// A cover crop to a WebP tile, the feed's thumbnails' transform.
    static let tile = ImageTransform(width: 40, height: 30, resize: .cover, quality: 60, format: .webp)
    /// A contain resize to a JPEG, the edit's output path.
    static let fit = ImageTransform(width: 50, resize: .contain, quality: 70, format: .jpeg)
}

/// One input: what libFuzzer calls, by this name. Its first byte picks the transform.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start, count > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start + 1, count: count - 1))
    _ = try? RenderPipeline.transform(bytes, start[0] % 2 == 0 ? Target.tile : Target.fit, limits: Target.limits)
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
