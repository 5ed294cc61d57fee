import Foundation
import FuzzDriver
import PositionReports

// libFuzzer target (`make test-fuzz`): tracking's one-pass reader of a driver's batch of
// positions (`PositionBatch`, from the PositionReports library tracking reads with), over any bytes a
// phone sends: it reads a batch or refuses the body — never a crash, a trap or a hang — and what it
// reads is whole: a point for every element, or the fields that were wrong with it.

/// One input: what libFuzzer calls, by this name.
@_cdecl("LLVMFuzzerTestOneInput")
func oneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    guard let batch = try? PositionBatch.read(Array(UnsafeBufferPointer(start: start, count: count))) else { return 0 }
    guard (1...PositionBatch.maxCount).contains(batch.points.count), batch.points.count == batch.badFields.count else {
        fatalError("a batch of \(batch.points.count) points and \(batch.badFields.count) verdicts")
    }
    for (point, bad) in zip(batch.points, batch.badFields) where (point == nil) == bad.isEmpty {
        fatalError("a point \(String(describing: point)) with bad fields \(bad)")
    }
    return 0
}

exit(splash_run_fuzzer(CommandLine.argc, CommandLine.unsafeArgv))
