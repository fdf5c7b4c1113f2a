//===- Compat.h - one plugin source for LLVM 15 to 22 ----------------------===//
//
// Every difference between the LLVM versions the plugin supports lives here,
// so the pass sources read the same against each: pass-builder callbacks that
// gained a ThinOrFullLTOPhase argument (LLVM 20), the Triple header's move and
// Module::getTargetTriple() returning a Triple (LLVM 21), atomicrmw operations
// added after LLVM 15, StringRef's renamed prefix test, and typed pointers
// (still possible in LLVM 15, gone since 17), and PassPlugin.h's move to
// llvm/Plugins (LLVM 22).
//
// Nothing here changes behaviour between versions: each shim returns the same
// answer on every version where the question makes sense.
//
//===----------------------------------------------------------------------===//
#ifndef NANO_COMPAT_H
#define NANO_COMPAT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Pass.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h"
#else
#include "llvm/Passes/PassPlugin.h"
#endif
#if LLVM_VERSION_MAJOR >= 17
#include "llvm/TargetParser/Triple.h"
#else
#include "llvm/ADT/Triple.h"
#endif

#include <functional>

// atomicrmw operations by the LLVM version that introduced them.
#define NANO_HAS_RMW_UINC_UDEC_WRAP (LLVM_VERSION_MAJOR >= 16)
#define NANO_HAS_RMW_USUB_COND_SAT (LLVM_VERSION_MAJOR >= 20)
#define NANO_HAS_RMW_FMAXIMUM_FMINIMUM (LLVM_VERSION_MAJOR >= 21)

namespace nano {
namespace compat {

// A module-pass-manager extension point callback, with the LTO phase the
// pipeline is built for (ThinOrFullLTOPhase::None on LLVM versions whose
// callbacks do not pass it).
using ModuleEPCallback = std::function<void(llvm::ModulePassManager &, llvm::OptimizationLevel,
                                            llvm::ThinOrFullLTOPhase)>;

// Registers CB at the OptimizerLast extension point: after the module
// optimisation pipeline (so after inlining), at every level including -O0,
// and in the pre-link step of full and thin LTO.
inline void registerOptimizerLast(llvm::PassBuilder &PB, ModuleEPCallback CB) {
#if LLVM_VERSION_MAJOR >= 20
  PB.registerOptimizerLastEPCallback(
      [CB](llvm::ModulePassManager &MPM, llvm::OptimizationLevel Level,
           llvm::ThinOrFullLTOPhase Phase) { CB(MPM, Level, Phase); });
#else
  PB.registerOptimizerLastEPCallback(
      [CB](llvm::ModulePassManager &MPM, llvm::OptimizationLevel Level) {
        CB(MPM, Level, llvm::ThinOrFullLTOPhase::None);
      });
#endif
}

// Where a pass runs in clang's pipelines (every optimisation level).
enum class PassPoint {
  PipelineStart, // before anything else: the source's calls still intact
  OptimizerLast  // after the optimisation pipeline (see registerOptimizerLast)
};

// Registers module pass PassT at Point and as `opt -passes=<Name>`.
template <typename PassT>
void registerModulePass(llvm::PassBuilder &PB, llvm::StringRef Name, PassPoint Point) {
  if (Point == PassPoint::PipelineStart)
    PB.registerPipelineStartEPCallback(
        [](llvm::ModulePassManager &MPM, llvm::OptimizationLevel) { MPM.addPass(PassT()); });
  else
    registerOptimizerLast(PB, [](llvm::ModulePassManager &MPM, llvm::OptimizationLevel,
                                 llvm::ThinOrFullLTOPhase) { MPM.addPass(PassT()); });
  PB.registerPipelineParsingCallback(
      [N = Name.str()](llvm::StringRef Given, llvm::ModulePassManager &MPM,
                       llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
        if (Given != N)
          return false;
        MPM.addPass(PassT());
        return true;
      });
}

// The module's target triple.
inline llvm::Triple targetTriple(const llvm::Module &M) {
#if LLVM_VERSION_MAJOR >= 21
  return M.getTargetTriple();
#else
  return llvm::Triple(M.getTargetTriple());
#endif
}

// True when S begins with Prefix (StringRef::startswith became starts_with).
inline bool startsWith(llvm::StringRef S, llvm::StringRef Prefix) {
  return S.substr(0, Prefix.size()) == Prefix;
}

// True when S ends with Suffix (StringRef::endswith became ends_with).
inline bool endsWith(llvm::StringRef S, llvm::StringRef Suffix) {
  return S.size() >= Suffix.size() && S.substr(S.size() - Suffix.size()) == Suffix;
}

// Moves I right before Pos (instruction positions became iterators).
inline void moveBefore(llvm::Instruction *I, llvm::Instruction *Pos) {
#if LLVM_VERSION_MAJOR >= 20
  I->moveBefore(Pos->getIterator());
#else
  I->moveBefore(Pos);
#endif
}

// True when the context still uses typed pointers (LLVM 15 with
// -no-opaque-pointers); the passes only handle opaque pointers.
inline bool typedPointers(llvm::LLVMContext &Ctx) {
#if LLVM_VERSION_MAJOR < 17
  return Ctx.supportsTypedPointers();
#else
  (void)Ctx;
  return false;
#endif
}

// True for a module of CPU code the passes can handle: not a GPU target
// (AMDGPU, NVPTX, SPIR-V) and with opaque pointers.
inline bool hostModule(const llvm::Module &M) {
  llvm::Triple TT = targetTriple(M);
  return !TT.isAMDGPU() && !TT.isNVPTX() && !TT.isSPIRV() && !typedPointers(M.getContext());
}

// The C string constant V points to (a constant global's initializer, as
// annotations and kernel names are given), or "" when it is none.
inline llvm::StringRef constantString(const llvm::Value *V) {
  auto *GV = llvm::dyn_cast<llvm::GlobalVariable>(V->stripPointerCasts());
  if (!GV || !GV->hasInitializer())
    return "";
  auto *Data = llvm::dyn_cast<llvm::ConstantDataSequential>(GV->getInitializer());
  return Data && Data->isCString() ? Data->getAsCString() : "";
}

} // namespace compat
} // namespace nano

#endif
