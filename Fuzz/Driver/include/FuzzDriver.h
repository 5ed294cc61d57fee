#ifndef SPLASH_FUZZ_DRIVER_H
#define SPLASH_FUZZ_DRIVER_H

/// Runs libFuzzer with the process's arguments over the target's `LLVMFuzzerTestOneInput`, and
/// returns what libFuzzer returns. Called from the target's own entry point: SwiftPM gives each
/// executable its own `main`, so libFuzzer's is never the one that runs.
int splash_run_fuzzer(int argc, char **argv);

#endif
