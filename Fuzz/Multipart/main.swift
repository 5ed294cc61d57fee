import Foundation
import FuzzDriver
import Multipart

// libFuzzer target (`make test-fuzz`): social's `multipart/form-data` reader (`MultipartForm`, from
// the Multipart library social reads uploads with) over any upload body, and the boundary reader over
// any content type: each answers or refuses — never crashes, traps or hangs. The first line of an
// input is the content type; the rest is the body.

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: start, count: count))
    let newline = bytes.firstIndex(of: 10) ?? bytes.count
    let contentType = String(decoding: bytes[..<newline], as: UTF8.self)
    let body = Array(bytes[min(bytes.count, newline + 1)...])
    if let form = MultipartForm(body, boundary: MultipartForm.boundary(of: contentType) ?? "splash-fuzz") {
        for part in form.parts { _ = (part.name, part.filename, part.contentType, part.body.count) }
    }
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
