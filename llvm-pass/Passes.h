//===- Passes.h - nanoprobe pass registration ------------------------------===//
//
// The plugin's passes, each in its own file, registered by Plugin.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef NANO_PASSES_H
#define NANO_PASSES_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace llvm {
class LLVMContext;
class PassBuilder;
class Twine;
} // namespace llvm

namespace nano {
// A compiler warning (clang: "warning: ... [-Wbackend-plugin]").
void warning(llvm::LLVMContext &Ctx, const llvm::Twine &Msg);
// The name of the twin of kernel Name (the rule of nano/dh_format.h).
std::string twinName(llvm::StringRef Name);
// CPU-kernel launches (LaunchRouting.cpp): NANO_LAUNCH routed to the runtime.
void registerLaunchRouting(llvm::PassBuilder &PB);
// GPU kernel launches (GpuLaunch.cpp): twins registered, CUDA/HIP launches routed.
void registerGpuLaunch(llvm::PassBuilder &PB);
// Host atomics (HostAtomics.cpp): hooks before every atomic op of host modules.
void registerHostAtomics(llvm::PassBuilder &PB);
// Kernel twins and device memory instrumentation (DeviceTwins.cpp and friends).
void registerDeviceInstrumentation(llvm::PassBuilder &PB);
} // namespace nano

#endif
