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
            // Host atomics before device instrumentation (both run at
            // OptimizerLast, in this order): a CPU kernel's twin is cloned
            // from the kernel with its atomics' hook calls, on the kernel's
            // own sites, so the kernel's atomics count the same whichever
            // runs. The host pass skips twins made before it (opt pipelines
            // naming nano-device first).
            nano::registerLaunchRouting(PB);
            nano::registerGpuLaunch(PB);
            nano::registerHostAtomics(PB);
            nano::registerDeviceInstrumentation(PB);
          }};
}
