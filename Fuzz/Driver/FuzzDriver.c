#include "FuzzDriver.h"

#include <stddef.h>
#include <stdint.h>

// libFuzzer's entry points (compiler-rt's FuzzerInterface.h).
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*one_input)(const uint8_t *data, size_t size));

int splash_run_fuzzer(int argc, char **argv) {
    return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}
