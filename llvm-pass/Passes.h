//===- Passes.h - nanoprobe pass registration ------------------------------===//
//
// The plugin's passes, each in its own file, registered by Plugin.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef NANO_PASSES_H
#define NANO_PASSES_H

namespace llvm {
class PassBuilder;
}

namespace nano {
// Host atomics (HostAtomics.cpp): hooks before every atomic op of host modules.
void registerHostAtomics(llvm::PassBuilder &PB);
// Kernel twins and device memory instrumentation (DeviceTwins.cpp and friends).
void registerDeviceInstrumentation(llvm::PassBuilder &PB);
} // namespace nano

#endif
