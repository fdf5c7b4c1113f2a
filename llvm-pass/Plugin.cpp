//===- Plugin.cpp - libNanoPass.so entry point -----------------------------===//
//
// The one entry point clang (-fpass-plugin=) and opt (-load-pass-plugin=) call.
// Each pass registers its own pipeline callbacks and opt pass names.
//
//===----------------------------------------------------------------------===//
#include "Compat.h" // PassBuilder.h and PassPlugin.h, wherever this LLVM keeps them
#include "Passes.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "NanoPass", NANO_VERSION, [](llvm::PassBuilder &PB) {
            // Device instrumentation first: twins are created before host
            // atomics run, and the host pass skips twins.
            nano::registerLaunchRouting(PB);
            nano::registerGpuLaunch(PB);
            nano::registerDeviceInstrumentation(PB);
            nano::registerHostAtomics(PB);
          }};
}
