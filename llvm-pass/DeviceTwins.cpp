//===- DeviceTwins.cpp - kernel twins with device memory instrumentation --===//
//
// The device half of libNanoPass.so. For every kernel of a module
//   - AMDGPU: calling convention amdgpu_kernel,
//   - NVPTX: calling convention ptx_kernel or an nvvm.annotations "kernel",
//   - CPU: a function annotated "nano_kernel" (NANO_KERNEL, nano/kernel.h),
// selected by the filters (DeviceOptions.h), the pass adds a *twin*: a copy
// with one more trailing parameter, a pointer (global address space) to a
// dh_comms buffer descriptor. The twin's name is NANO_TWIN_PREFIX + the
// original's, with "Pv" appended to the parameter list of a mangled name (see
// nano/dh_format.h), so it demangles to the original signature plus void*.
// The twin keeps the original's attributes (launch bounds, flat work-group
// size, waves per EU), metadata, comdat kind and debug info, carries the
// attribute "nano.twin", and is an entry point itself: AMDGPU places its
// hidden arguments after the explicit ones; NVPTX gets the kernel calling
// convention and copies of the original's nvvm.annotations. The original
// kernel is never changed.
//
// Functions the twin calls (directly, transitively) that are defined in the
// module are cloned with the same extra parameter ("<name>.nano_twin", made
// unique by the module; "nano_unnamed.nano_twin" for an unnamed one), so
// their accesses are recorded too while the original kernel's callees stay
// untouched.
//
// In the twin and its cloned callees every load, store, atomicrmw, cmpxchg,
// memset/memcpy/memmove, masked vector load/store and AMDGPU raw buffer
// load/store whose address space the filters select becomes a *site* (kernel,
// file, line, column, kind, size, address space), and gets a call
//     __nano_dh_access(desc, site id, address, size, address-space class)
// right before it. The device runtime (dh_comms/device/dh_device.c) is linked
// into the module from bitcode (nano_dh_<target>.bc), internalised, and given
// the target CPU and features of the module's kernels. Stack accesses
// (allocas) and the runtime's own globals (__nano_*) are not sites.
//
// The module's site table is one constant blob (layout: nano/dh_format.h) in
// section NANO_DH_SITES_SECTION, symbol NANO_DH_SITES_SYMBOL + module id.
//
// Sites are numbered per function in reverse post-order of its blocks, so
// that forward edges go from lower to higher numbers (see collectAccesses).
//
// CPU twins (virtual waves, runtime/dispatch/cpu.c) also tell the runtime
// where a GPU's wave would reconverge that site order alone cannot say:
// their blocks are numbered with each loop contiguous (its exits after all
// of its body), every loop that holds a site or a call to a twin-side
// function calls __nano_dh_reconverge(desc, point) at its latches, point
// being the site count at the loop's end (the runtime orders it after every
// site of the loop and before the first after it: lanes that finished an
// iteration wait there for the lanes still in it), and every cloned callee
// calls __nano_dh_enter(desc) on entry and __nano_dh_leave(desc) before it
// returns (the call depth the runtime orders lanes by, where the stack bytes
// in use vary with a variable-length array).
//
// A kernel that a twin launches on the device (CUDA dynamic parallelism)
// starts its twin, given the launching twin's descriptor with bit 0 set
// (routeDeviceLaunch); the child's twin clears it (untagChildDesc).
//
// GPU kernel twins call __nano_dh_block_enter(desc) after their allocas and
// __nano_dh_block_leave(desc) before every return: KernelTimeline's block
// start and end on the device clock (nothing happens unless the runtime set
// the descriptor's block table). CPU kernels are timed by the runtime's
// workers instead.
//
// Runs at the OptimizerLast extension point (after inlining, so the twin of
// an optimised kernel records the accesses the optimised code makes) and as
// `opt -passes=nano-device`.
//
//===----------------------------------------------------------------------===//
#include "Compat.h"
#include "DeviceOptions.h"
#include "Passes.h"
#include "SourceFile.h"
#include "nano/hash.h"

#include "../dh_comms/include/nano/dh_format.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsAMDGPU.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <string>
#include <vector>

using namespace llvm;
using namespace nano;

#define DEBUG_TYPE "nano-device"

// Counted in release builds of LLVM too (see HostAtomics.cpp).
ALWAYS_ENABLED_STATISTIC(NumTwins, "kernel twins created");
ALWAYS_ENABLED_STATISTIC(NumCalleeClones, "callees cloned for the twins");
ALWAYS_ENABLED_STATISTIC(NumDeviceSites, "device memory operations instrumented");
ALWAYS_ENABLED_STATISTIC(NumReconvergePoints, "loops of CPU twins given a reconvergence point");
ALWAYS_ENABLED_STATISTIC(NumAsmUnseen,
                         "inline assembly statements in twins that may touch memory, not recorded");
ALWAYS_ENABLED_STATISTIC(NumTwinsBounded,
                         "NVPTX twins given the block-size bound their kernel lacks");
ALWAYS_ENABLED_STATISTIC(NumTwinsTimed, "GPU twins that time their blocks (KernelTimeline)");
ALWAYS_ENABLED_STATISTIC(NumDeviceLaunchesRouted,
                         "kernel launches on the device in twins that start the child's twin");
ALWAYS_ENABLED_STATISTIC(NumDeviceLaunchesNotRouted,
                         "kernel launches on the device in twins, which start the original child "
                         "(each said at compile time)");
ALWAYS_ENABLED_STATISTIC(NumExternalCallees,
                         "device functions twins call that are defined in another file, not "
                         "recorded (each said at compile time)");

namespace {

const char *const RuntimeAccess = "__nano_dh_access";
// CPU twins only (see the banner).
const char *const RuntimeReconverge = "__nano_dh_reconverge";
const char *const RuntimeEnter = "__nano_dh_enter";
const char *const RuntimeLeave = "__nano_dh_leave";
// GPU kernel twins only (see the banner).
const char *const RuntimeBlockEnter = "__nano_dh_block_enter";
const char *const RuntimeBlockLeave = "__nano_dh_block_leave";
const char *const CalleeSuffix = ".nano_twin";
// Functions without a name (ROCm's hostcall code has @0, @1, ...): their
// clones are named UnnamedClone + CalleeSuffix (made unique by the module),
// their sites' function UnnamedSiteFunction.
const char *const UnnamedClone = "nano_unnamed";
const char *const UnnamedSiteFunction = "(unnamed)";
// The most threads a block of an NVIDIA GPU can have (every architecture
// since sm_20): the bound of a twin whose kernel has none.
const unsigned NvptxMaxThreads = 1024;

// Kernel launches on the device (CUDA dynamic parallelism: clang's <<<>>> in
// device code calls one of these with the child kernel first). Those of the
// first kind with a parameter buffer of a known size start the child's twin
// instead (routeDeviceLaunch); any other starts the original child, which
// has no buffer to record into (said).
const char *const DeviceLaunches[] = {"cudaLaunchDevice",       "cudaLaunchDeviceV2",
                                      "cudaLaunchDevice_ptsz",  "cudaLaunchDeviceV2_ptsz",
                                      "__cudaCDP2LaunchDevice", "__cudaCDP2LaunchDeviceV2"};
const char *const RoutableLaunches[] = {"cudaLaunchDevice", "cudaLaunchDevice_ptsz",
                                        "__cudaCDP2LaunchDevice"};
// Their parameter buffers: (alignment, size) -> buffer.
const char *const ParameterBuffers[] = {"cudaGetParameterBuffer", "__cudaCDP2GetParameterBuffer"};
// The bit of the descriptor's address a child's twin gets set (routeDeviceLaunch).
const uint64_t ChildTag = 1;
// Where the child twin's descriptor goes in the parameter buffer: after the
// child's parameters, at a pointer's alignment.
const uint64_t ParamPointerAlign = 8;
// Declarations a GPU module calls that are the toolchain's, not the
// program's: the CUDA device runtime and libdevice, ROCm's device
// libraries, printf and assert. A call of any other declaration from a twin
// goes to a device function of another file (-fgpu-rdc), which has no clone
// here: its accesses are not recorded.
const char *const RuntimeDeclarations[] = {"vprintf",      "printf",        "malloc",        "free",
                                           "__assertfail", "__assert_fail", "__nvvm_reflect"};
const char *const RuntimeDeclarationPrefixes[] = {"cuda",    "__cuda",  "__nv_",  "__ockl_",
                                                  "__ocml_", "__llvm_", "__hip_", "__nano_"};

enum class DevTarget { AMDGPU, NVPTX, Host };

// One instrumented instruction.
struct DevSite {
  std::string Function; // original kernel or device function
  std::string File;
  unsigned Line = 0, Column = 0;
  unsigned Kind = 0, Space = 0, Flags = 0, Size = 0;
};

// An access found in a twin-side function, before instrumentation.
struct DevAccess {
  Instruction *I;
  Value *Ptr;   // pointer operand; null for buffer intrinsics
  Value *Bytes; // runtime size (mem intrinsics), else null
  unsigned Kind, Space, Flags, Size;
  Value *Rsrc = nullptr, *VOff = nullptr, *SOff = nullptr; // buffer intrinsics
};

struct DeviceTwinsPass : PassInfoMixin<DeviceTwinsPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &);
};

// The state of one run over a module.
struct DeviceTwins {
  Module &M;
  LLVMContext &Ctx;
  const DataLayout &DL;
  DevTarget Target;
  DeviceFilters Filters;
  unsigned DescAS;
  uint32_t ModuleId = 0;
  std::vector<DevSite> Sites;
  // Original function -> its twin-side clone (kernels and callees), in
  // creation order so that site numbering is deterministic.
  MapVector<Function *, Function *> Clones;
  // Twin-side clone -> name to record in its sites.
  DenseMap<Function *, std::string> SiteNames;
  FunctionCallee Access;
  FunctionCallee Reconverge, Enter, Leave; // CPU twins
  FunctionCallee BlockEnter, BlockLeave;   // GPU kernel twins
  SmallPtrSet<Function *, 16> TwinSide;    // the clones' set (Clones' values)
  SmallPtrSet<Function *, 8> KernelTwins;  // the kernels' twins among them
  SmallPtrSet<Function *, 4> ChildTwins;   // those that twins launch on the device
  // A launch on the device routed to the child's twin, its parameter
  // buffer, and where the descriptor goes in it (routeDeviceLaunch).
  struct RoutedLaunch {
    CallInst *Launch, *Buffer;
    Function *Child;
    uint64_t Size, At; // the child's parameters' bytes; where the descriptor goes
  };
  std::vector<RoutedLaunch> RoutedLaunches;

  DeviceTwins(Module &M, DevTarget T)
      : M(M), Ctx(M.getContext()), DL(M.getDataLayout()), Target(T),
        DescAS(T == DevTarget::Host ? 0 : 1) {}

  bool run();
  std::vector<Function *> kernels();
  Function *makeClone(Function &F, const std::string &Name, bool IsKernel);
  void boundTwin(Function &Twin);
  void cloneCallees();
  void sayUnfollowedCalls();
  void sayDeviceLaunch(Instruction &At, Value *Child, unsigned Depth);
  void routeDeviceLaunches();
  bool routeDeviceLaunch(CallInst *Launch);
  void storeChildDescs();
  void untagChildDesc(Function &Twin);
  void collectAccesses(ArrayRef<BasicBlock *> Order, std::vector<DevAccess> &Out,
                       std::vector<Instruction *> &Unseen);
  bool placeSite(Function &F, const Instruction *I, DevSite &S);
  void addUnseen(Function &F, Instruction *I);
  void instrumentFunction(Function &F, bool IsKernel);
  void markReconvergence(Function &F, const LoopInfo &LI, ArrayRef<BasicBlock *> Order,
                         const DenseMap<BasicBlock *, uint64_t> &SitesAfter);
  void markBlockTimes(Function &Twin);
  bool classify(Value *Ptr, unsigned &Space);
  void instrument(Function &F, const DevAccess &A);
  uint64_t siteId(uint64_t Index) const { return (uint64_t)ModuleId << 32 | Index; }
  void emitSiteTable();
  bool linkRuntime(Function *SomeKernel);
  void inlineRuntime();
};

} // namespace

std::string nano::twinName(StringRef Name) {
  std::string T = NANO_TWIN_PREFIX;
  if (!compat::startsWith(Name, "_Z"))
    return T + Name.str();
  // Itanium: a nested or plain function name followed by the parameter
  // types. The parameter list ends the name (no return type for non-template
  // functions; template functions have the return type first, which is still
  // in front of the parameters), so appending one type extends it; a list of
  // just "v" (no parameters) is replaced.
  if (compat::endsWith(Name, "v")) {
    // "v" is the whole parameter list only when it follows the function name:
    // demangling the name without it must give an empty parameter list.
    std::string D = llvm::demangle(Name.str());
    if (compat::endsWith(D, "()"))
      return T + Name.drop_back(1).str() + "Pv";
  }
  return T + Name.str() + "Pv";
}

// FNV-1a over S (nano/hash.h).
static uint32_t devHash(StringRef S, uint32_t H = NANO_FNV32_OFFSET) {
  return nano_fnv32(H, S.data(), S.size());
}

std::vector<Function *> DeviceTwins::kernels() {
  std::vector<Function *> Out;
  SmallPtrSet<Function *, 8> Annotated;
  if (Target == DevTarget::NVPTX) {
    if (NamedMDNode *NA = M.getNamedMetadata("nvvm.annotations"))
      for (MDNode *N : NA->operands()) {
        if (N->getNumOperands() < 3)
          continue;
        auto *VM = dyn_cast_or_null<ValueAsMetadata>(N->getOperand(0).get());
        auto *Key = dyn_cast_or_null<MDString>(N->getOperand(1).get());
        if (VM && Key && Key->getString() == "kernel")
          if (auto *F = dyn_cast<Function>(VM->getValue()))
            Annotated.insert(F);
      }
  } else if (Target == DevTarget::Host) {
    if (GlobalVariable *GA = M.getNamedGlobal("llvm.global.annotations"))
      if (auto *CA = dyn_cast<ConstantArray>(GA->getInitializer()))
        for (Value *Op : CA->operands()) {
          auto *CS = dyn_cast<ConstantStruct>(Op);
          if (!CS || CS->getNumOperands() < 2)
            continue;
          auto *F = dyn_cast<Function>(CS->getOperand(0)->stripPointerCasts());
          if (F && compat::constantString(CS->getOperand(1)) == "nano_kernel")
            Annotated.insert(F);
        }
  }
  for (Function &F : M) {
    // Twins carry the attribute; the prefix is reserved for them, so a kernel
    // named with it (a twin whose attribute was lost, or a hand-written one)
    // never gets a twin of its own.
    if (F.isDeclaration() || F.hasFnAttribute(NANO_TWIN_ATTR) ||
        compat::startsWith(F.getName(), NANO_TWIN_PREFIX))
      continue;
    bool IsKernel = false;
    switch (Target) {
    case DevTarget::AMDGPU:
      IsKernel = F.getCallingConv() == CallingConv::AMDGPU_KERNEL;
      break;
    case DevTarget::NVPTX:
      IsKernel = F.getCallingConv() == CallingConv::PTX_Kernel || Annotated.count(&F);
      break;
    case DevTarget::Host:
      IsKernel = Annotated.count(&F);
      break;
    }
    if (!IsKernel || !Filters.kernelSelected(F.getName()))
      continue;
    Function *Existing = M.getFunction(twinName(F.getName()));
    if (Existing && !Existing->isDeclaration())
      continue; // already instrumented (e.g. the pass ran twice)
    Out.push_back(&F);
  }
  return Out;
}

// Drops what the original's attributes promise and the instrumentation
// breaks: memory effects and nosync (the runtime writes the buffer with
// atomics), non-capture of pointer parameters (addresses are recorded).
static void devDropPromises(Function &F) {
#if LLVM_VERSION_MAJOR >= 16
  F.removeFnAttr(Attribute::Memory);
#else
  for (Attribute::AttrKind K :
       {Attribute::ReadNone, Attribute::ReadOnly, Attribute::WriteOnly, Attribute::ArgMemOnly,
        Attribute::InaccessibleMemOnly, Attribute::InaccessibleMemOrArgMemOnly})
    F.removeFnAttr(K);
#endif
  F.removeFnAttr(Attribute::NoSync);
  for (unsigned i = 0; i < F.arg_size(); i++) {
#if LLVM_VERSION_MAJOR >= 21
    F.removeParamAttr(i, Attribute::Captures);
#else
    F.removeParamAttr(i, Attribute::NoCapture);
#endif
  }
}

// OpenCL-style per-argument kernel metadata (kernel_arg_*) of a twin gets an
// entry for the descriptor, so that code object metadata emitters find one
// per parameter.
static void devExtendArgMetadata(Function &NF) {
  LLVMContext &C = NF.getContext();
  const std::pair<const char *, Metadata *> Extra[] = {
      {"kernel_arg_addr_space", ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(C), 1))},
      {"kernel_arg_access_qual", MDString::get(C, "none")},
      {"kernel_arg_type", MDString::get(C, "void*")},
      {"kernel_arg_base_type", MDString::get(C, "void*")},
      {"kernel_arg_type_qual", MDString::get(C, "")},
      {"kernel_arg_name", MDString::get(C, "nano_dh_desc")}};
  for (auto &E : Extra) {
    MDNode *N = NF.getMetadata(E.first);
    if (!N || N->getNumOperands() + 1 != NF.arg_size())
      continue;
    SmallVector<Metadata *, 8> Ops(N->op_begin(), N->op_end());
    Ops.push_back(E.second);
    NF.setMetadata(E.first, MDNode::get(C, Ops));
  }
}

// A twin needs more registers than its kernel (the original of one real
// kernel: 32, its twin: 81). A kernel without launch bounds may be launched
// with up to NvptxMaxThreads threads per block, so its twin without bounds
// could fail to launch where the original does: such a twin gets the bound
// (.maxntid), and ptxas caps its registers and spills instead. Bounds the
// original has were copied with its attributes or annotations.
void DeviceTwins::boundTwin(Function &Twin) {
#if LLVM_VERSION_MAJOR >= 20
  if (Twin.hasFnAttribute("nvvm.maxntid") || Twin.hasFnAttribute("nvvm.reqntid"))
    return;
  Twin.addFnAttr("nvvm.maxntid", std::to_string(NvptxMaxThreads));
#else
  NamedMDNode *NA = M.getOrInsertNamedMetadata("nvvm.annotations");
  for (MDNode *N : NA->operands()) {
    auto *VM = N->getNumOperands() >= 2 ? dyn_cast_or_null<ValueAsMetadata>(N->getOperand(0).get())
                                        : nullptr;
    auto *Key = N->getNumOperands() >= 2 ? dyn_cast<MDString>(N->getOperand(1)) : nullptr;
    if (VM && VM->getValue() == &Twin && Key &&
        (compat::startsWith(Key->getString(), "maxntid") ||
         compat::startsWith(Key->getString(), "reqntid")))
      return;
  }
  Type *I32 = Type::getInt32Ty(Ctx);
  NA->addOperand(
      MDNode::get(Ctx, {ValueAsMetadata::get(&Twin), MDString::get(Ctx, "maxntidx"),
                        ConstantAsMetadata::get(ConstantInt::get(I32, NvptxMaxThreads))}));
#endif
  NumTwinsBounded++;
}

// Clones F into a new function Name with one more trailing parameter (the
// descriptor). Kernels keep linkage, comdat kind and entry-point properties;
// callees become internal.
Function *DeviceTwins::makeClone(Function &F, const std::string &Name, bool IsKernel) {
  FunctionType *FT = F.getFunctionType();
  SmallVector<Type *, 8> Params(FT->param_begin(), FT->param_end());
  Params.push_back(PointerType::get(Ctx, DescAS));
  auto *NFT = FunctionType::get(FT->getReturnType(), Params, FT->isVarArg());

  // A declaration the user wrote is replaced by the clone. A definition of
  // that name (another clone: callees without a name all map to one name)
  // stays, and the module gives the new clone a unique name; kernels never
  // get here with their twin's name defined (devSelectKernels).
  Function *Decl = M.getFunction(Name);
  if (Decl && !Decl->isDeclaration())
    Decl = nullptr;
  assert(!(IsKernel && M.getFunction(Name) && !Decl) && "a kernel's twin name is taken");
  if (Decl)
    Decl->setName(Name + ".nano_decl");
  Function *NF = Function::Create(NFT, IsKernel ? F.getLinkage() : GlobalValue::InternalLinkage,
                                  F.getAddressSpace(), Name, &M);
  NF->copyAttributesFrom(&F);
  if (!IsKernel) {
    NF->setLinkage(GlobalValue::InternalLinkage);
    NF->setVisibility(GlobalValue::DefaultVisibility);
  }
  ValueToValueMapTy VMap;
  auto NI = NF->arg_begin();
  for (Argument &A : F.args()) {
    NI->setName(A.getName());
    VMap[&A] = &*NI++;
  }
  NI->setName("nano_dh_desc");
  SmallVector<ReturnInst *, 8> Returns;
  CloneFunctionInto(NF, &F, VMap, CloneFunctionChangeType::LocalChangesOnly, Returns);
  NF->addFnAttr(NANO_TWIN_ATTR);
  devDropPromises(*NF);
  // The instrumentation reads work-item and dispatch registers the original
  // may have been proven not to need.
  SmallVector<StringRef, 8> NoAttrs;
  for (Attribute A : NF->getAttributes().getFnAttrs())
    if (A.isStringAttribute() && compat::startsWith(A.getKindAsString(), "amdgpu-no-"))
      NoAttrs.push_back(A.getKindAsString());
  for (StringRef A : NoAttrs)
    NF->removeFnAttr(A);
  if (IsKernel && F.hasComdat()) {
    Comdat *C = M.getOrInsertComdat(Name);
    C->setSelectionKind(F.getComdat()->getSelectionKind());
    NF->setComdat(C);
  } else if (!IsKernel) {
    NF->setComdat(nullptr);
  }
  if (Decl) {
    Decl->replaceAllUsesWith(NF);
    Decl->eraseFromParent();
  }
  if (IsKernel)
    devExtendArgMetadata(*NF);
  if (IsKernel && Target == DevTarget::NVPTX) {
    if (NamedMDNode *NA = M.getNamedMetadata("nvvm.annotations")) {
      SmallVector<MDNode *, 4> Copies;
      for (MDNode *N : NA->operands()) {
        auto *VM = dyn_cast_or_null<ValueAsMetadata>(N->getOperand(0).get());
        if (!VM || VM->getValue() != &F)
          continue;
        SmallVector<Metadata *, 4> Ops(N->op_begin(), N->op_end());
        Ops[0] = ValueAsMetadata::get(NF);
        Copies.push_back(MDNode::get(Ctx, Ops));
      }
      for (MDNode *N : Copies)
        NA->addOperand(N);
    }
    boundTwin(*NF);
  }
  Clones[&F] = NF;
  SiteNames[NF] = F.hasName() ? F.getName().str() : UnnamedSiteFunction;
  return NF;
}

// Clones every defined function reachable by direct calls from twin-side
// code and redirects those calls to the clones, passing the descriptor on.
void DeviceTwins::cloneCallees() {
  SmallVector<Function *, 16> Work;
  for (auto &KV : Clones)
    Work.push_back(KV.second);
  while (!Work.empty()) {
    Function *F = Work.pop_back_val();
    Value *Desc = F->getArg(F->arg_size() - 1);
    SmallVector<CallInst *, 16> Calls;
    for (Instruction &I : instructions(*F))
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (Function *Callee = CI->getCalledFunction())
          if (!Callee->isDeclaration() && !Callee->isIntrinsic() &&
              !compat::startsWith(Callee->getName(), "__nano_") &&
              CI->getFunctionType() == Callee->getFunctionType() && !Callee->isVarArg())
            Calls.push_back(CI);
    for (CallInst *CI : Calls) {
      Function *Callee = CI->getCalledFunction();
      Function *Clone = Clones.lookup(Callee);
      if (!Clone) {
        if (Callee->hasFnAttribute(NANO_TWIN_ATTR))
          continue;
        StringRef Base = Callee->hasName() ? Callee->getName() : StringRef(UnnamedClone);
        Clone = makeClone(*Callee, (Base + CalleeSuffix).str(), false);
        Work.push_back(Clone);
      }
      SmallVector<Value *, 8> Args(CI->args());
      Args.push_back(Desc);
      SmallVector<OperandBundleDef, 2> Bundles;
      CI->getOperandBundlesAsDefs(Bundles);
      IRBuilder<> B(CI);
      CallInst *New = B.CreateCall(Clone->getFunctionType(), Clone, Args, Bundles);
      New->takeName(CI);
      New->setCallingConv(CI->getCallingConv());
      New->setTailCallKind(CI->getTailCallKind());
      New->setAttributes(CI->getAttributes());
      New->copyMetadata(*CI);
      New->setDebugLoc(CI->getDebugLoc());
      CI->replaceAllUsesWith(New);
      CI->eraseFromParent();
    }
  }
}

// The place of instruction I to name in a message, "FILE:LINE: ", or "":
// the program's own line, out of the toolkit's inlined wrappers.
static std::string devWhere(const Instruction &I) {
  const DILocation *L = I.getDebugLoc().get();
  while (L && L->getInlinedAt() && libraryLocation(L))
    L = L->getInlinedAt();
  return L ? (L->getFilename() + ":" + Twine(L->getLine()) + ": ").str() : std::string();
}

// Says that the kernel Child, which call At in twin-side code launches on the
// device, runs uninstrumented. Where Child is a parameter of a cloned callee
// (the toolkit's cudaLaunchDevice wrapper, not inlined at -O0), it is said at
// each call of that callee with the kernel given there (Depth: callees
// followed so far).
void DeviceTwins::sayDeviceLaunch(Instruction &At, Value *Child, unsigned Depth) {
  const unsigned MaxWrappers = 8; // nesting of launch wrappers followed at most
  Function *In = At.getFunction();
  Value *Kernel = Child->stripPointerCasts();
  // -O0 keeps a parameter in its stack slot: the one value stored there
  if (auto *Load = dyn_cast<LoadInst>(Kernel))
    if (auto *Slot = dyn_cast<AllocaInst>(Load->getPointerOperand())) {
      Value *Stored = nullptr;
      unsigned Stores = 0;
      for (User *U : Slot->users())
        if (auto *St = dyn_cast<StoreInst>(U); St && St->getPointerOperand() == Slot) {
          Stored = St->getValueOperand()->stripPointerCasts();
          ++Stores;
        }
      if (Stores == 1)
        Kernel = Stored;
    }
  auto *Param = dyn_cast<Argument>(Kernel);
  if (Param && Depth < MaxWrappers && !KernelTwins.count(In)) {
    bool Followed = false;
    for (User *U : In->users())
      if (auto *Call = dyn_cast<CallInst>(U))
        if (Call->getCalledFunction() == In && TwinSide.count(Call->getFunction())) {
          sayDeviceLaunch(*Call, Call->getArgOperand(Param->getArgNo()), Depth + 1);
          Followed = true;
        }
    if (Followed)
      return;
  }
  auto *F = dyn_cast<Function>(Kernel);
  if (F && KernelTwins.count(F)) // routed: the child's twin
    return;
  const char *Why = !F                  ? "it is not known at compile time"
                    : !Clones.lookup(F) ? "no twin of it in this file"
                                        : "its parameter buffer is not one the plugin can extend";
  nano::warning(Ctx, Twine("nanoprobe: ") + devWhere(At) + "the kernel " +
                         (F ? F->getName() : StringRef("(a kernel pointer)")) +
                         " that the twin of " + SiteNames.lookup(In) +
                         " launches on the device runs uninstrumented (dynamic parallelism "
                         "starts the original here: " +
                         Why + ")");
  ++NumDeviceLaunchesNotRouted;
}

// Whether F is one of the CUDA device runtime's functions Names, by its
// name: a declaration of the toolkit's, or (at -O0) the twin-side clone of
// a header's inline wrapper around one ("cudaLaunchDevice(void*, ...)"
// demangled). Only a name that holds one of them is demangled.
static bool devToolkitIs(const Function &F, ArrayRef<const char *> Names) {
  StringRef Name = F.getName();
  if (llvm::none_of(Names, [&](const char *N) { return Name.contains(N); }))
    return false;
  size_t Suffix = Name.find(CalleeSuffix);
  if (Suffix != StringRef::npos)
    Name = Name.take_front(Suffix);
  std::string Base = Name.str();
  if (compat::startsWith(Name, "_Z")) {
    std::string D = llvm::demangle(Base);
    Base = D.substr(0, D.find('('));
  }
  return llvm::is_contained(Names, Base);
}

// Routes each kernel launch on the device in the twins whose child has a
// twin here (routeDeviceLaunch): CUDA dynamic parallelism then records the
// child's accesses too, into the launching dispatch's buffer.
void DeviceTwins::routeDeviceLaunches() {
  if (Target != DevTarget::NVPTX)
    return;
  SmallVector<CallInst *, 4> Launches;
  for (auto &KV : Clones)
    for (Instruction &I : instructions(*KV.second))
      if (auto *CI = dyn_cast<CallInst>(&I))
        if (Function *Callee = CI->getCalledFunction())
          if (CI->arg_size() >= 2 && devToolkitIs(*Callee, RoutableLaunches))
            Launches.push_back(CI);
  for (CallInst *CI : Launches)
    if (routeDeviceLaunch(CI))
      ++NumDeviceLaunchesRouted;
}

// Launch (cudaLaunchDevice(child, buffer, grid, block, shared, stream) in a
// twin-side function) starts the child's twin instead when the child is a
// kernel of this module with a twin and the buffer is this function's
// cudaGetParameterBuffer(alignment, size) of a constant size: the buffer
// grows by a pointer, after the child's parameters at a pointer's alignment
// (where the twin's extra parameter lies), which gets the launching twin's
// descriptor with bit 0 (ChildTag) set (storeChildDescs), so that the
// child's twin records into the launching dispatch's buffer but times no
// blocks (untagChildDesc). false: left as it is (sayUnfollowedCalls says
// it).
bool DeviceTwins::routeDeviceLaunch(CallInst *Launch) {
  Function *In = Launch->getFunction();
  auto *Child = dyn_cast<Function>(Launch->getArgOperand(0)->stripPointerCasts());
  Function *Twin = Child ? Clones.lookup(Child) : nullptr;
  if (!Twin || !KernelTwins.count(Twin))
    return false;
  auto *Buf = dyn_cast<CallInst>(Launch->getArgOperand(1)->stripPointerCasts());
  Function *BufFn = Buf ? Buf->getCalledFunction() : nullptr;
  if (!BufFn || Buf->getFunction() != In || Buf->arg_size() < 2 ||
      !devToolkitIs(*BufFn, ParameterBuffers))
    return false;
  auto *Size = dyn_cast<ConstantInt>(Buf->getArgOperand(1));
  if (!Size)
    return false;
  uint64_t At = alignTo(Size->getZExtValue(), ParamPointerAlign);
  Buf->setArgOperand(1, ConstantInt::get(Size->getType(), At + ParamPointerAlign));
  Launch->setArgOperand(0, Twin);
  ChildTwins.insert(Twin);
  RoutedLaunches.push_back({Launch, Buf, Child, Size->getZExtValue(), At});
  return true;
}

// Stores each routed launch's descriptor into its parameter buffer, and
// where the twin's launch fails, launches the original child as the
// program did, with a buffer of its own size holding the same arguments
// (its result then the program's): a child's twin that cannot start never
// leaves the child's work undone. After instrumentation: nothing of this is
// a site.
void DeviceTwins::storeChildDescs() {
  Type *I64 = Type::getInt64Ty(Ctx);
  for (const RoutedLaunch &R : RoutedLaunches) {
    CallInst *Launch = R.Launch;
    Function *In = Launch->getFunction();
    IRBuilder<> B(Launch);
    Value *Desc = In->getArg(In->arg_size() - 1);
    Value *Tagged = B.CreateOr(B.CreatePtrToInt(Desc, I64), ChildTag);
    B.CreateAlignedStore(Tagged, B.CreateConstInBoundsGEP1_64(Type::getInt8Ty(Ctx), R.Buffer, R.At),
                         Align(ParamPointerAlign));
    if (!Launch->getType()->isIntegerTy())
      continue;
    // Head: the twin's launch; Fallback: a buffer for the original;
    // Relaunch: the arguments copied, the original launched; then Cont.
    BasicBlock *Head = Launch->getParent();
    BasicBlock *Cont = Head->splitBasicBlock(std::next(Launch->getIterator()), "nano.launched");
    BasicBlock *Fallback = BasicBlock::Create(Ctx, "nano.launch.failed", In, Cont);
    BasicBlock *Relaunch = BasicBlock::Create(Ctx, "nano.launch.original", In, Cont);
    Head->getTerminator()->eraseFromParent();
    B.SetInsertPoint(Head);
    B.SetCurrentDebugLocation(Launch->getDebugLoc());
    B.CreateCondBr(B.CreateICmpNE(Launch, ConstantInt::get(Launch->getType(), 0)), Fallback, Cont);
    B.SetInsertPoint(Fallback);
    auto *Buf = cast<CallInst>(R.Buffer->clone());
    Buf->setArgOperand(1, ConstantInt::get(R.Buffer->getArgOperand(1)->getType(), R.Size));
    B.Insert(Buf);
    B.CreateCondBr(B.CreateIsNull(Buf), Cont, Relaunch);
    B.SetInsertPoint(Relaunch);
    B.CreateMemCpy(Buf, Align(1), R.Buffer, Align(1), R.Size);
    auto *Again = cast<CallInst>(Launch->clone());
    Again->setArgOperand(0, R.Child);
    Again->setArgOperand(1, Buf);
    B.Insert(Again);
    B.CreateBr(Cont);
    B.SetInsertPoint(&*Cont->begin());
    PHINode *Rc = B.CreatePHI(Launch->getType(), 3);
    Launch->replaceUsesWithIf(Rc, [&](Use &U) {
      auto *I = dyn_cast<Instruction>(U.getUser());
      return I && I->getParent() != Head && I->getParent() != Fallback;
    });
    Rc->addIncoming(Launch, Head);
    Rc->addIncoming(Launch, Fallback);
    Rc->addIncoming(Again, Relaunch);
  }
}

// The entry block's first place after its allocas (which stay first: the
// stack slots of a kernel are static).
static BasicBlock::iterator devAfterAllocas(Function &F) {
  BasicBlock::iterator At = F.getEntryBlock().getFirstInsertionPt();
  while (isa<AllocaInst>(*At))
    ++At;
  return At;
}

// A kernel twin that twins launch on the device takes its descriptor with
// ChildTag set from them (routeDeviceLaunch) and without it from the host:
// the tag is cleared for every use, and its block times go to no table (a
// child's block ids would land in the launching dispatch's).
void DeviceTwins::untagChildDesc(Function &Twin) {
  Argument *Arg = Twin.getArg(Twin.arg_size() - 1);
  IRBuilder<> B(&*devAfterAllocas(Twin));
  Type *I64 = Type::getInt64Ty(Ctx);
  auto *Bits = cast<Instruction>(B.CreatePtrToInt(Arg, I64));
  Value *Desc = B.CreateIntToPtr(B.CreateAnd(Bits, ~ChildTag), Arg->getType());
  Arg->replaceUsesWithIf(Desc, [&](Use &U) { return U.getUser() != Bits; });
  Value *Child = B.CreateICmpNE(B.CreateAnd(Bits, ChildTag), ConstantInt::get(I64, 0));
  Value *Table =
      B.CreateSelect(Child, ConstantPointerNull::get(cast<PointerType>(Arg->getType())), Desc);
  for (Instruction &I : instructions(Twin))
    if (auto *CI = dyn_cast<CallInst>(&I))
      if (CI->getCalledOperand() == BlockEnter.getCallee() ||
          CI->getCalledOperand() == BlockLeave.getCallee())
        CI->setArgOperand(0, Table);
}

// Says at each call in a GPU twin that leaves the twin's world (dynamic
// parallelism's child launch; a device function of another file, which
// -fgpu-rdc leaves to the device link) that what it runs is not recorded:
// once per launch site, once per external callee.
void DeviceTwins::sayUnfollowedCalls() {
  if (Target == DevTarget::Host)
    return; // a CPU twin calls the C library, which is never instrumented
  SmallPtrSet<Function *, 8> Said;
  for (auto &KV : Clones)
    for (Instruction &I : instructions(*KV.second)) {
      auto *CI = dyn_cast<CallInst>(&I);
      Function *Callee = CI ? CI->getCalledFunction() : nullptr;
      if (!Callee || !Callee->isDeclaration() || Callee->isIntrinsic())
        continue;
      StringRef Name = Callee->getName();
      const std::string &In = SiteNames.lookup(KV.second);
      if (llvm::is_contained(DeviceLaunches, Name)) {
        if (CI->arg_size())
          sayDeviceLaunch(*CI, CI->getArgOperand(0), 0);
        continue;
      }
      if (Name.empty() || llvm::is_contained(RuntimeDeclarations, Name) ||
          llvm::any_of(RuntimeDeclarationPrefixes,
                       [&](const char *P) { return compat::startsWith(Name, P); }) ||
          !Said.insert(Callee).second)
        continue;
      nano::warning(Ctx, Twine("nanoprobe: ") + devWhere(I) + In + " calls " + Name +
                             ", a device function of another file (-fgpu-rdc): its accesses "
                             "are not recorded in the twin");
      ++NumExternalCallees;
    }
}

// The class (NANO_DH_AS_*) of address space AS of the target; false for
// memory that is never instrumented (private/local, buffer resources).
static bool devSpaceClass(DevTarget T, unsigned AS, unsigned &Space) {
  if (T == DevTarget::Host) {
    Space = NANO_DH_AS_GENERIC;
    return AS == 0;
  }
  if (AS == 0)
    Space = NANO_DH_AS_GENERIC;
  else if (AS == 1)
    Space = NANO_DH_AS_GLOBAL;
  else if (AS == 3)
    Space = NANO_DH_AS_SHARED;
  else if (AS == 4 || (T == DevTarget::AMDGPU && AS == 6))
    Space = NANO_DH_AS_CONSTANT;
  else
    return false;
  return true;
}

// The object Ptr points into, seen through llvm.threadlocal.address.
static const Value *devObject(const Value *Ptr) {
  const Value *U = getUnderlyingObject(Ptr);
#if LLVM_VERSION_MAJOR >= 16
  if (auto *II = dyn_cast<IntrinsicInst>(U))
    if (II->getIntrinsicID() == Intrinsic::threadlocal_address)
      U = getUnderlyingObject(II->getArgOperand(0));
#endif
  return U;
}

// True for the runtime's own state: a __nano_* global, or what a pointer
// loaded from one points to (a CPU kernel's position, read through
// __nano_kctx).
static bool devRuntimeState(const Value *U) {
  if (auto *LI = dyn_cast<LoadInst>(U))
    U = devObject(LI->getPointerOperand());
  auto *GV = dyn_cast<GlobalValue>(U);
  return GV && compat::startsWith(GV->getName(), "__nano_");
}

// The address-space class of Ptr; false when it is not instrumentable at all
// (private/local stack memory, buffer resources, unknown spaces, the
// runtime's own state). A generic pointer whose underlying object is known
// (e.g. a __shared__ array reached through an addrspacecast, as NVPTX IR has
// it until the code generator infers address spaces) gets that object's class.
bool DeviceTwins::classify(Value *Ptr, unsigned &Space) {
  unsigned AS = Ptr->getType()->getPointerAddressSpace();
  if (!devSpaceClass(Target, AS, Space))
    return false;
  const Value *U = devObject(Ptr);
  if (isa<AllocaInst>(U) || devRuntimeState(U))
    return false;
  if (AS == 0 && U->getType()->isPointerTy() && U->getType()->getPointerAddressSpace() != 0)
    return devSpaceClass(Target, U->getType()->getPointerAddressSpace(), Space);
  return true;
}

// Base address (bits 0..47) of an AMDGPU buffer resource given as <4 x i32>
// or as a ptr addrspace(8), plus the offsets, as i64 at I.
static Value *devBufferAddress(IRBuilder<> &B, Value *Rsrc, Value *VOff, Value *SOff) {
  Type *I64 = B.getInt64Ty();
  Value *Base;
  if (Rsrc->getType()->isPointerTy()) {
    Base = B.CreateTrunc(B.CreatePtrToInt(Rsrc, B.getIntNTy(128)), I64);
  } else {
    Value *Lo = B.CreateZExt(B.CreateExtractElement(Rsrc, uint64_t(0)), I64);
    Value *Hi = B.CreateZExt(B.CreateExtractElement(Rsrc, uint64_t(1)), I64);
    Base = B.CreateOr(Lo, B.CreateShl(Hi, 32));
  }
  Base = B.CreateAnd(Base, B.getInt64((1ull << 48) - 1));
  Value *Off = B.CreateAdd(B.CreateZExtOrTrunc(VOff, I64), B.CreateZExtOrTrunc(SOff, I64));
  return B.CreateAdd(Base, Off);
}

// The accesses of one PTX instruction in inline assembly, as clang's CUDA
// headers write __ldcs, __ldcg, __ldlu, __ldcv, __stwt, __stcs and cp.async:
// "ld.global.cs.v4.f32 {$0,$1,$2,$3}, [$4];", "st.global.wt.f32 [$0], $1;",
// "cp.async.ca.shared.global [$0], [$1], 16;". Adds each access it makes
// (with its operand's pointer, the instruction's width and state space) to
// Out and returns true; false for any other assembly.
static bool devAsmAccesses(CallInst *CI, const InlineAsm *IA, std::vector<DevAccess> &Out);

// Whether AMDGPU inline assembly IA holds a memory instruction (a mnemonic
// of the global, flat, buffer, scratch, LDS or scalar memory families),
// which the pass does not read: the twin does not record it.
static bool devAmdgpuAsmMemory(const InlineAsm *IA) {
  static const char *const Families[] = {"global_", "flat_",  "buffer_",       "scratch_",
                                         "ds_",     "s_load", "s_buffer_load", "s_store"};
  SmallVector<StringRef, 8> Lines, Statements;
  StringRef(IA->getAsmString()).split(Lines, '\n');
  for (StringRef L : Lines)
    L.split(Statements, ';');
  for (StringRef St : Statements) {
    StringRef Op = St.trim().split(' ').first;
    if (llvm::any_of(Families, [&](const char *F) { return compat::startsWith(Op, F); }))
      return true;
  }
  return false;
}

static bool devAsmAccesses(CallInst *CI, const InlineAsm *IA, std::vector<DevAccess> &Out) {
  StringRef Text = StringRef(IA->getAsmString()).trim();
  if (compat::endsWith(Text, ";"))
    Text = Text.drop_back().rtrim();
  if (Text.contains(';') || Text.contains('\n'))
    return false; // more than one instruction
  auto [Op, Operands] = Text.split(' ');
  SmallVector<StringRef, 8> Parts;
  Op.split(Parts, '.');
  bool Load = Parts[0] == "ld", Store = Parts[0] == "st",
       Copy = Parts.size() > 1 && Parts[0] == "cp" && Parts[1] == "async";
  if (!Load && !Store && !Copy)
    return false;
  // "$N" operands: outputs come first and are not call arguments
  unsigned Outputs = 0;
  for (const InlineAsm::ConstraintInfo &C : IA->ParseConstraints()) {
    if (C.isIndirect)
      return false; // memory operands: not the forms handled here
    Outputs += C.Type == InlineAsm::isOutput;
  }
  // the "[$N]" address operands, in order
  SmallVector<Value *, 2> Addrs;
  for (StringRef Rest = Operands; !Rest.empty();) {
    size_t Open = Rest.find("[$");
    if (Open == StringRef::npos)
      break;
    unsigned N;
    StringRef Num = Rest.substr(Open + 2).take_while([](char c) { return isDigit(c); });
    if (Num.getAsInteger(10, N) || N < Outputs || N - Outputs >= CI->arg_size())
      return false;
    Type *Ty = CI->getArgOperand(N - Outputs)->getType();
    if (!Ty->isPointerTy() && !Ty->isIntegerTy())
      return false;
    Addrs.push_back(CI->getArgOperand(N - Outputs));
    Rest = Rest.substr(Open + 2 + Num.size());
  }
  unsigned Space = NANO_DH_AS_GENERIC, Vec = 1, Elem = 0;
  for (StringRef P : Parts) {
    if (P == "global")
      Space = NANO_DH_AS_GLOBAL;
    else if (P == "shared")
      Space = NANO_DH_AS_SHARED;
    else if (P == "const")
      Space = NANO_DH_AS_CONSTANT;
    else if (P == "local" || P == "param")
      return true; // never instrumented: nothing to add, nothing to say
    else if (P == "v2" || P == "v4" || P == "v8")
      Vec = P[1] - '0';
    else if (P.size() >= 2 && (P[0] == 'f' || P[0] == 'b' || P[0] == 'u' || P[0] == 's') &&
             isDigit(P[1])) { // f32, b16, u8, s64, b128, f16x2, bf16x2...
      unsigned Bits = 0;
      if (P.substr(1).take_while([](char c) { return isDigit(c); }).getAsInteger(10, Bits))
        return false;
      Elem = Bits / 8 * (compat::endsWith(P, "x2") ? 2 : 1);
    }
  }
  if (Copy) { // cp.async.*.shared.global [dst], [src], bytes: a global load, a shared store
    size_t Comma = Operands.rfind(',');
    unsigned Bytes = 0;
    if (Addrs.size() != 2 || Comma == StringRef::npos ||
        Operands.substr(Comma + 1).trim().getAsInteger(10, Bytes) || !Bytes)
      return false;
    Out.push_back(
        {CI, Addrs[1], nullptr, NANO_DH_KIND_LOAD, NANO_DH_AS_GLOBAL, NANO_DH_SITE_ASM, Bytes});
    Out.push_back(
        {CI, Addrs[0], nullptr, NANO_DH_KIND_STORE, NANO_DH_AS_SHARED, NANO_DH_SITE_ASM, Bytes});
    return true;
  }
  if (Addrs.size() != 1 || !Elem)
    return false;
  Out.push_back({CI, Addrs[0], nullptr, Load ? NANO_DH_KIND_LOAD : NANO_DH_KIND_STORE, Space,
                 NANO_DH_SITE_ASM, Elem * Vec});
  return true;
}

// Appends the blocks of RPO that lie in Scope (the whole function when null)
// to Out, each loop nested in Scope contiguous, in RPO order otherwise.
static void devLoopOrder(ArrayRef<BasicBlock *> RPO, const Loop *Scope, const LoopInfo &LI,
                         SmallPtrSetImpl<BasicBlock *> &Done, std::vector<BasicBlock *> &Out) {
  for (BasicBlock *BB : RPO) {
    if (Done.count(BB) || (Scope && !Scope->contains(BB)))
      continue;
    const Loop *L = LI.getLoopFor(BB);
    if (L == Scope) {
      Done.insert(BB);
      Out.push_back(BB);
      continue;
    }
    while (L->getParentLoop() != Scope) // the loop of BB directly in Scope
      L = L->getParentLoop();
    devLoopOrder(RPO, L, LI, Done, Out);
  }
}

// F's blocks in reverse post-order with each loop's blocks contiguous: a
// loop is entered at its header only (LoopInfo's loops are natural), so
// forward edges still go from earlier blocks to later ones, and every block
// of a loop comes before the blocks after it, even an exit that RPO visits
// before the loop's body.
static std::vector<BasicBlock *> devBlockOrder(Function &F, const LoopInfo &LI) {
  ReversePostOrderTraversal<Function *> RPOT(&F);
  std::vector<BasicBlock *> RPO(RPOT.begin(), RPOT.end()), Out;
  SmallPtrSet<BasicBlock *, 32> Done;
  devLoopOrder(RPO, nullptr, LI, Done, Out);
  return Out;
}

// The accesses of the blocks of a twin-side function, in Order, into Out, in
// site order; returns how many inline assembly statements that may touch
// memory it could not read.
void DeviceTwins::collectAccesses(ArrayRef<BasicBlock *> Order, std::vector<DevAccess> &Out,
                                  std::vector<Instruction *> &Unseen) {
  auto Add = [&](Instruction *I, Value *Ptr, unsigned Kind, Type *Ty, unsigned Flags,
                 Value *Bytes) {
    unsigned Space = 0;
    if (!classify(Ptr, Space))
      return;
    unsigned Size = Ty ? (unsigned)DL.getTypeStoreSize(Ty).getFixedValue() : 0;
    Out.push_back({I, Ptr, Bytes, Kind, Space, Flags, Size});
  };
  // Sites are numbered in the blocks' order (devBlockOrder): every forward
  // edge of the CFG leads from lower site numbers to higher ones (blocks of a
  // loop come before its exit, both arms of a branch before the join), which
  // is what the CPU back end's wave scheduler reconverges by.
  for (BasicBlock *BB : Order)
    for (Instruction &I : *BB) {
      if (auto *LI = dyn_cast<LoadInst>(&I)) {
        Add(LI, LI->getPointerOperand(), NANO_DH_KIND_LOAD, LI->getType(), 0, nullptr);
      } else if (auto *SI = dyn_cast<StoreInst>(&I)) {
        Add(SI, SI->getPointerOperand(), NANO_DH_KIND_STORE, SI->getValueOperand()->getType(), 0,
            nullptr);
      } else if (auto *RMW = dyn_cast<AtomicRMWInst>(&I)) {
        Add(RMW, RMW->getPointerOperand(), NANO_DH_KIND_ATOMIC, RMW->getValOperand()->getType(), 0,
            nullptr);
      } else if (auto *CX = dyn_cast<AtomicCmpXchgInst>(&I)) {
        Add(CX, CX->getPointerOperand(), NANO_DH_KIND_ATOMIC, CX->getNewValOperand()->getType(), 0,
            nullptr);
      } else if (auto *MT = dyn_cast<MemTransferInst>(&I)) {
        Add(MT, MT->getRawSource(), NANO_DH_KIND_LOAD, nullptr, NANO_DH_SITE_MEMINTRINSIC,
            MT->getLength());
        Add(MT, MT->getRawDest(), NANO_DH_KIND_STORE, nullptr, NANO_DH_SITE_MEMINTRINSIC,
            MT->getLength());
      } else if (auto *MS = dyn_cast<MemSetInst>(&I)) {
        Add(MS, MS->getRawDest(), NANO_DH_KIND_STORE, nullptr, NANO_DH_SITE_MEMINTRINSIC,
            MS->getLength());
      } else if (auto *CI = dyn_cast<CallInst>(&I); CI && CI->isInlineAsm()) {
        auto *IA = cast<InlineAsm>(CI->getCalledOperand());
        bool Clobbers = (IA->hasSideEffects() || CI->mayReadOrWriteMemory()) &&
                        StringRef(IA->getConstraintString()).contains("memory");
        if ((Target == DevTarget::NVPTX && !devAsmAccesses(CI, IA, Out) && Clobbers) ||
            (Target == DevTarget::AMDGPU && (Clobbers || devAmdgpuAsmMemory(IA))))
          Unseen.push_back(CI);
      } else if (auto *II = dyn_cast<IntrinsicInst>(&I)) {
        switch (II->getIntrinsicID()) {
        case Intrinsic::masked_load:
          Add(II, II->getArgOperand(0), NANO_DH_KIND_LOAD, II->getType(), NANO_DH_SITE_MASKED,
              nullptr);
          break;
        case Intrinsic::masked_store:
          Add(II, II->getArgOperand(1), NANO_DH_KIND_STORE, II->getArgOperand(0)->getType(),
              NANO_DH_SITE_MASKED, nullptr);
          break;
        case Intrinsic::amdgcn_raw_buffer_load:
#if LLVM_VERSION_MAJOR >= 17
        case Intrinsic::amdgcn_raw_ptr_buffer_load:
#endif
        case Intrinsic::amdgcn_raw_buffer_store:
#if LLVM_VERSION_MAJOR >= 17
        case Intrinsic::amdgcn_raw_ptr_buffer_store:
#endif
        {
          bool IsLoad = II->getType() && !II->getType()->isVoidTy();
          unsigned First = IsLoad ? 0 : 1;
          Type *Ty = IsLoad ? II->getType() : II->getArgOperand(0)->getType();
          DevAccess A{II,
                      nullptr,
                      nullptr,
                      IsLoad ? NANO_DH_KIND_LOAD : NANO_DH_KIND_STORE,
                      NANO_DH_AS_GLOBAL,
                      NANO_DH_SITE_BUFFER,
                      (unsigned)DL.getTypeStoreSize(Ty).getFixedValue()};
          A.Rsrc = II->getArgOperand(First);
          A.VOff = II->getArgOperand(First + 1);
          A.SOff = II->getArgOperand(First + 2);
          Out.push_back(A);
          break;
        }
        default:
          break;
        }
      }
    }
}

// The widest access NVPTX's load/store vectorizer makes of adjacent scalars
// (ld/st.v4.b32, .v2.b64): 16 bytes.
const unsigned NvptxVectorBytes = 16;

// Whether the instructions strictly between A and B (same block, A first)
// leave memory alone: a run of accesses the backend can merge.
static bool devNothingBetween(const Instruction *A, const Instruction *B) {
  for (const Instruction *I = A->getNextNode(); I && I != B; I = I->getNextNode())
    if (I->mayReadOrWriteMemory())
      return false;
  return true;
}

// NVPTX: the load/store vectorizer runs in the backend, after this pass. In
// the original it merges adjacent scalar accesses (a float4 that SROA split
// into four floats) back into one ld/st.v4; in the twin the calls before each
// would keep them scalar, so the twin made narrower accesses than the kernel
// and its records said 4 bytes where the machine moves 16. So a run of simple
// loads (or stores) in one block, nothing else touching memory between them,
// at consecutive offsets from one base, of equal size, whose total is a power
// of two of at most NvptxVectorBytes that the first's alignment covers,
// becomes one access of the total size at the first: one site, one call, and
// the run stays adjacent for the vectorizer. Out keeps program order.
static void devMergeVectorRuns(const DataLayout &DL, std::vector<DevAccess> &Out) {
  // a plain (non-volatile, non-atomic) load or store, and its alignment
  auto Simple = [](const Instruction *I, Align &Al) {
    if (auto *L = dyn_cast<LoadInst>(I))
      return Al = L->getAlign(), L->isSimple();
    if (auto *S = dyn_cast<StoreInst>(I))
      return Al = S->getAlign(), S->isSimple();
    return false;
  };
  std::vector<DevAccess> Merged;
  for (size_t i = 0; i < Out.size();) {
    DevAccess A = Out[i];
    Align First(1), Al(1);
    int64_t Off0 = 0;
    const Value *Base =
        Simple(A.I, First) && A.Size ? GetPointerBaseWithConstantOffset(A.Ptr, Off0, DL) : nullptr;
    size_t Last = i; // the last access of the longest run that merges
    for (size_t j = i + 1; Base && j < Out.size(); j++) {
      const DevAccess &B = Out[j];
      int64_t Off = 0;
      if (B.Kind != A.Kind || B.Space != A.Space || B.Size != A.Size ||
          B.I->getParent() != A.I->getParent() || B.I->getOpcode() != A.I->getOpcode() ||
          !Simple(B.I, Al) || !devNothingBetween(Out[j - 1].I, B.I) ||
          GetPointerBaseWithConstantOffset(B.Ptr, Off, DL) != Base ||
          Off != Off0 + (int64_t)(j - i) * A.Size)
        break;
      unsigned Size = (unsigned)(j - i + 1) * A.Size;
      if (Size > NvptxVectorBytes)
        break;
      if (isPowerOf2_32(Size) && First.value() >= Size)
        Last = j;
    }
    A.Size *= (unsigned)(Last - i + 1);
    Merged.push_back(A);
    i = Last + 1;
  }
  Out.swap(Merged);
}

// Numbers the sites of twin-side function F and instruments them; in a CPU
// twin, also the loops' reconvergence points and the call depth (banner).
void DeviceTwins::instrumentFunction(Function &F, bool IsKernel) {
  DominatorTree DT(F);
  LoopInfo LI(DT);
  std::vector<BasicBlock *> Order;
  if (Target == DevTarget::Host) {
    Order = devBlockOrder(F, LI);
  } else {
    ReversePostOrderTraversal<Function *> RPOT(&F);
    Order.assign(RPOT.begin(), RPOT.end());
  }
  std::vector<DevAccess> Accesses;
  std::vector<Instruction *> Unseen;
  collectAccesses(Order, Accesses, Unseen);
  if (Target == DevTarget::NVPTX)
    devMergeVectorRuns(DL, Accesses);
  unsigned AsmUnseen = static_cast<unsigned>(Unseen.size());
  if (AsmUnseen) {
    nano::warning(Ctx, Twine("nanoprobe: ") + SiteNames.lookup(&F) + ": " + Twine(AsmUnseen) +
                           " inline assembly statement" + (AsmUnseen == 1 ? "" : "s") +
                           " that may touch memory " + (AsmUnseen == 1 ? "is" : "are") +
                           " not recorded (" +
                           (Target == DevTarget::NVPTX ? "only PTX ld, st and cp.async are read"
                                                       : "AMDGPU inline assembly is not read") +
                           ")");
    NumAsmUnseen += AsmUnseen;
  }
  // the site count after each block, for the reconvergence points
  DenseMap<BasicBlock *, uint64_t> SitesAfter;
  size_t k = 0;
  for (BasicBlock *BB : Order) {
    for (; k < Accesses.size() && Accesses[k].I->getParent() == BB; k++)
      instrument(F, Accesses[k]);
    SitesAfter[BB] = Sites.size();
  }
  for (Instruction *I : Unseen) // after the function's sites: their order stands
    addUnseen(F, I);
  if (Target != DevTarget::Host) {
    if (IsKernel)
      markBlockTimes(F);
    return;
  }
  markReconvergence(F, LI, Order, SitesAfter);
  if (IsKernel)
    return; // the lanes start at depth 0
  Value *Desc = F.getArg(F.arg_size() - 1);
  IRBuilder<> B(&*F.getEntryBlock().getFirstInsertionPt());
  B.CreateCall(Enter, {Desc});
  for (BasicBlock &BB : F)
    if (auto *Ret = dyn_cast<ReturnInst>(BB.getTerminator())) {
      B.SetInsertPoint(Ret);
      B.CreateCall(Leave, {Desc});
    }
}

// A GPU kernel twin calls __nano_dh_block_enter(desc) once its allocas are
// made (they stay the entry block's first instructions) and
// __nano_dh_block_leave(desc) before each return (banner).
void DeviceTwins::markBlockTimes(Function &Twin) {
  Value *Desc = Twin.getArg(Twin.arg_size() - 1);
  IRBuilder<> B(&*devAfterAllocas(Twin));
  B.CreateCall(BlockEnter, {Desc});
  for (BasicBlock &BB : Twin)
    if (auto *Ret = dyn_cast<ReturnInst>(BB.getTerminator())) {
      B.SetInsertPoint(Ret);
      B.CreateCall(BlockLeave, {Desc});
    }
  NumTwinsTimed++;
}

// A CPU twin's loops that hold a site or a call to a twin-side function get
// __nano_dh_reconverge(desc, point) before each latch's branch, point being
// the site count at the loop's last block in Order (banner).
void DeviceTwins::markReconvergence(Function &F, const LoopInfo &LI, ArrayRef<BasicBlock *> Order,
                                    const DenseMap<BasicBlock *, uint64_t> &SitesAfter) {
  DenseMap<BasicBlock *, size_t> Pos;
  for (size_t i = 0; i < Order.size(); i++)
    Pos[Order[i]] = i;
  Value *Desc = F.getArg(F.arg_size() - 1);
  for (Loop *L : LI.getLoopsInPreorder()) {
    // the loop's blocks are contiguous in Order, its header first
    // (devBlockOrder); a header is never the entry block, so First > 0
    size_t First = Pos.lookup(L->getHeader()), Last = First + L->getNumBlocks() - 1;
    uint64_t Before = SitesAfter.lookup(Order[First - 1]);
    uint64_t End = SitesAfter.lookup(Order[Last]);
    bool Calls = false;
    for (BasicBlock *BB : L->blocks())
      for (Instruction &I : *BB)
        if (auto *CB = dyn_cast<CallBase>(&I))
          Calls |= CB->getCalledFunction() && TwinSide.count(CB->getCalledFunction());
    if (End == Before && !Calls)
      continue; // nothing recorded inside: nothing to keep together
    SmallVector<BasicBlock *, 4> Latches;
    L->getLoopLatches(Latches);
    for (BasicBlock *Latch : Latches) {
      IRBuilder<> B(Latch->getTerminator());
      B.CreateCall(Reconverge, {Desc, B.getInt64(siteId(End))});
    }
    ++NumReconvergePoints;
  }
}

// Adds the site of A and the runtime call before A.I, if the filters want it.
void DeviceTwins::instrument(Function &F, const DevAccess &A) {
  if (!(Filters.Kinds & (1u << A.Kind)) || !(Filters.Spaces & (1u << A.Space)))
    return;
  DevSite S;
  if (!placeSite(F, A.I, S))
    return;
  S.Kind = A.Kind;
  S.Space = A.Space;
  S.Flags = A.Flags;
  S.Size = A.Bytes ? 0 : A.Size;
  uint64_t Id = siteId(Sites.size());
  Sites.push_back(S);
  ++NumDeviceSites;

  IRBuilder<> B(A.I);
  // a pointer, or (inline assembly's "r" operand of cp.async) a 32-bit
  // shared-memory address
  Value *Addr = A.Rsrc                            ? devBufferAddress(B, A.Rsrc, A.VOff, A.SOff)
                : A.Ptr->getType()->isIntegerTy() ? B.CreateZExtOrTrunc(A.Ptr, B.getInt64Ty())
                                                  : B.CreatePtrToInt(A.Ptr, B.getInt64Ty());
  Value *Size = A.Bytes ? B.CreateZExtOrTrunc(A.Bytes, B.getInt32Ty()) : B.getInt32(A.Size);
  Value *Desc = F.getArg(F.arg_size() - 1);
  CallInst *C = B.CreateCall(Access, {Desc, B.getInt64(Id), Addr, Size, B.getInt32(A.Space)});
  C->setDebugLoc(A.I->getDebugLoc());
}

// Fills S's function, file, line and column for instruction I of twin-side
// F; false when the filters' scope (NANO_SCOPE) leaves it out.
bool DeviceTwins::placeSite(Function &F, const Instruction *I, DevSite &S) {
  S.Function = SiteNames.lookup(&F);
  if (const DebugLoc &Loc = I->getDebugLoc()) {
    S.File = nano::sourceFile(Loc.get());
    S.Line = Loc->getLine();
    S.Column = Loc->getColumn();
  }
  return Filters.inScope(S.File, S.Line);
}

// Adds a site for instruction I of twin-side F that the twin does not
// record (inline assembly that may touch memory): no call, a table entry
// only, so that `kerneldb sites` shows where the twin is blind.
void DeviceTwins::addUnseen(Function &F, Instruction *I) {
  DevSite S;
  if (!placeSite(F, I, S))
    return;
  S.Kind = NANO_DH_KIND_UNSEEN;
  S.Space = NANO_DH_AS_GENERIC;
  S.Flags = NANO_DH_SITE_UNSEEN;
  Sites.push_back(S);
}

// The site table blob (layout: nano/dh_format.h).
void DeviceTwins::emitSiteTable() {
  std::string Str(1, '\0'); // offset 0: the empty string
  StringMap<uint32_t> StrOff;
  auto Intern = [&](const std::string &S) -> uint32_t {
    if (S.empty())
      return 0;
    auto It = StrOff.find(S);
    if (It != StrOff.end())
      return It->second;
    uint32_t Off = Str.size();
    Str += S;
    Str.push_back('\0');
    StrOff[S] = Off;
    return Off;
  };
  std::vector<uint8_t> Blob;
  auto Put32 = [&](uint32_t V) {
    for (int i = 0; i < 4; i++)
      Blob.push_back(uint8_t(V >> (8 * i)));
  };
  std::vector<uint32_t> Offs;
  for (const DevSite &S : Sites) {
    Offs.push_back(Intern(S.Function));
    Offs.push_back(Intern(S.File));
  }
  Blob.insert(Blob.end(), NANO_DH_SITES_MAGIC, NANO_DH_SITES_MAGIC + 8);
  Put32(NANO_DH_SITES_VERSION);
  Put32(ModuleId);
  Put32(Sites.size());
  Put32(Str.size());
  for (size_t i = 0; i < Sites.size(); i++) {
    const DevSite &S = Sites[i];
    Put32(Offs[2 * i]);
    Put32(Offs[2 * i + 1]);
    Put32(S.Line);
    Put32(S.Column);
    Blob.push_back(uint8_t(S.Kind));
    Blob.push_back(uint8_t(S.Space));
    Blob.push_back(uint8_t(S.Flags));
    Blob.push_back(0);
    Put32(S.Size);
  }
  Blob.insert(Blob.end(), Str.begin(), Str.end());
  while (Blob.size() % 8)
    Blob.push_back(0);

  Constant *Init = ConstantDataArray::get(Ctx, ArrayRef<uint8_t>(Blob));
  char Hex[16];
  snprintf(Hex, sizeof Hex, "%08x", ModuleId);
  unsigned AS = Target == DevTarget::AMDGPU ? 4 : Target == DevTarget::NVPTX ? 1 : 0;
  auto *GV = new GlobalVariable(
      M, Init->getType(), true,
      Target == DevTarget::Host ? GlobalValue::InternalLinkage : GlobalValue::ExternalLinkage, Init,
      std::string(NANO_DH_SITES_SYMBOL) + Hex, nullptr, GlobalValue::NotThreadLocal, AS);
  if (Target != DevTarget::Host)
    GV->setVisibility(GlobalValue::ProtectedVisibility);
  GV->setAlignment(Align(8));
  if (Target != DevTarget::NVPTX)
    GV->setSection(NANO_DH_SITES_SECTION);
  appendToUsed(M, {GV});
}

// Links nano_dh_<flavour>.bc into M, internalises its functions and gives them
// the target attributes of Kernel.
bool DeviceTwins::linkRuntime(Function *Kernel) {
  std::string Flavour = "host";
  if (Target == DevTarget::NVPTX) {
    Flavour = "nvptx64";
  } else if (Target == DevTarget::AMDGPU) {
    // GFX6-9 run wave64 only; GFX10+ run wave32 unless built with
    // -mwavefrontsize64. The runtime's wave vote is compiled per wave size.
    StringRef CPU = Kernel->getFnAttribute("target-cpu").getValueAsString();
    StringRef Features = Kernel->getFnAttribute("target-features").getValueAsString();
    bool Gfx9 = CPU.empty() || compat::startsWith(CPU, "gfx9") || compat::startsWith(CPU, "gfx8") ||
                compat::startsWith(CPU, "gfx7") || compat::startsWith(CPU, "gfx6");
    bool Wave64 = Features.contains("+wavefrontsize64");
    Flavour = Gfx9 ? "amdgcn_gfx9" : Wave64 ? "amdgcn_gfx10_w64" : "amdgcn_gfx10_w32";
  }
  std::string Err;
  std::string Path = findDeviceBitcode(Flavour, Err);
  if (Path.empty()) {
    Ctx.emitError(Err);
    return false;
  }
  auto Buf = MemoryBuffer::getFile(Path);
  if (!Buf) {
    Ctx.emitError("nanoprobe: cannot read " + Path + ": " + Buf.getError().message());
    return false;
  }
  Expected<std::unique_ptr<Module>> RT = parseBitcodeFile((*Buf)->getMemBufferRef(), Ctx);
  if (!RT) {
    Ctx.emitError("nanoprobe: " + Path + ": " + toString(RT.takeError()) +
                  " (the device runtime must come from the clang of the plugin's LLVM)");
    return false;
  }
  Module &R = **RT;
  if (NamedMDNode *Flags = R.getModuleFlagsMetadata())
    R.eraseNamedMetadata(Flags);
  if (NamedMDNode *Ident = R.getNamedMetadata("llvm.ident"))
    R.eraseNamedMetadata(Ident);
  R.setDataLayout(M.getDataLayout());
  R.setTargetTriple(M.getTargetTriple());
  std::vector<std::string> Defined;
  for (Function &F : R)
    if (!F.isDeclaration())
      Defined.push_back(F.getName().str());
  if (Linker::linkModules(M, std::move(*RT), Linker::LinkOnlyNeeded)) {
    Ctx.emitError("nanoprobe: cannot link the device runtime " + Path);
    return false;
  }
  Attribute CPU = Kernel->getFnAttribute("target-cpu");
  Attribute Features = Kernel->getFnAttribute("target-features");
  for (const std::string &Name : Defined) {
    Function *F = M.getFunction(Name);
    if (!F || F->isDeclaration())
      continue;
    F->setLinkage(GlobalValue::InternalLinkage);
    F->setVisibility(GlobalValue::DefaultVisibility);
    // Leaf functions; clang 15 does not infer it, and AMDGPU gives callers of
    // possibly recursive functions a dynamic 16 KiB stack.
    F->addFnAttr(Attribute::NoRecurse);
    F->addFnAttr(Attribute::NoUnwind);
    // The wave's active lanes at the call form the record: calls must not be
    // merged or moved across divergent control flow.
    if (Target != DevTarget::Host)
      F->addFnAttr(Attribute::Convergent);
    F->removeFnAttr("target-cpu");
    F->removeFnAttr("target-features");
    F->removeFnAttr("tune-cpu");
    if (CPU.isValid())
      F->addFnAttr(CPU);
    if (Features.isValid())
      F->addFnAttr(Features);
  }
  return true;
}

// Inlines __nano_dh_access at every call (NANO_DEVICE_INLINE=1): no call
// overhead, more code per site.
void DeviceTwins::inlineRuntime() {
  Function *RT = M.getFunction(RuntimeAccess);
  if (!RT || RT->isDeclaration())
    return;
  SmallVector<CallBase *, 32> Calls;
  for (User *U : RT->users())
    if (auto *CB = dyn_cast<CallBase>(U))
      if (CB->getCalledFunction() == RT)
        Calls.push_back(CB);
  for (CallBase *CB : Calls) {
    InlineFunctionInfo IFI;
    InlineResult R = InlineFunction(*CB, IFI);
    if (!R.isSuccess())
      Ctx.emitError(std::string("nanoprobe: cannot inline ") + RuntimeAccess + ": " +
                    R.getFailureReason());
  }
  if (RT->use_empty())
    RT->eraseFromParent();
}

bool DeviceTwins::run() {
  std::string Err;
  if (!parseDeviceFilters(Filters, Err)) {
    Ctx.emitError("nanoprobe: " + Err);
    return false;
  }
  std::vector<Function *> Kernels = kernels();
  if (Kernels.empty())
    return false;
  // Source, triple, target CPU (one code object per GPU architecture of a
  // fat binary) and module identifier.
  ModuleId = devHash(M.getSourceFileName());
  ModuleId = devHash(compat::targetTriple(M).str(), devHash(StringRef("\0", 1), ModuleId));
  ModuleId = devHash(Kernels.front()->getFnAttribute("target-cpu").getValueAsString(),
                     devHash(StringRef("\0", 1), ModuleId));
  ModuleId = devHash(M.getModuleIdentifier(), devHash(StringRef("\0", 1), ModuleId));

  Type *Void = Type::getVoidTy(Ctx);
  Type *I64 = Type::getInt64Ty(Ctx), *I32 = Type::getInt32Ty(Ctx);
  Access = M.getOrInsertFunction(
      RuntimeAccess,
      FunctionType::get(Void, {PointerType::get(Ctx, DescAS), I64, I64, I32, I32}, false));
  if (auto *AF = dyn_cast<Function>(Access.getCallee()))
    if (AF->getFunctionType() != Access.getFunctionType()) {
      Ctx.emitError(std::string("nanoprobe: ") + RuntimeAccess + " is declared with another type");
      return false;
    }

  for (Function *K : Kernels)
    makeClone(*K, twinName(K->getName()), true);
  NumTwins += Kernels.size();
  cloneCallees();
  NumCalleeClones += Clones.size() - Kernels.size();
  for (auto &KV : Clones)
    TwinSide.insert(KV.second);
  for (Function *K : Kernels)
    KernelTwins.insert(Clones.lookup(K));
  routeDeviceLaunches();
  sayUnfollowedCalls();
  PointerType *DescTy = PointerType::get(Ctx, DescAS);
  if (Target == DevTarget::Host) {
    Reconverge =
        M.getOrInsertFunction(RuntimeReconverge, FunctionType::get(Void, {DescTy, I64}, false));
    Enter = M.getOrInsertFunction(RuntimeEnter, FunctionType::get(Void, {DescTy}, false));
    Leave = M.getOrInsertFunction(RuntimeLeave, FunctionType::get(Void, {DescTy}, false));
  } else {
    BlockEnter = M.getOrInsertFunction(RuntimeBlockEnter, FunctionType::get(Void, {DescTy}, false));
    BlockLeave = M.getOrInsertFunction(RuntimeBlockLeave, FunctionType::get(Void, {DescTy}, false));
  }
  for (auto &KV : Clones) // creation order: deterministic site numbers
    instrumentFunction(*KV.second, KernelTwins.count(KV.second));
  storeChildDescs();
  for (Function *Child : ChildTwins)
    untagChildDesc(*Child);
  emitSiteTable();
  if (linkRuntime(Kernels.front()) && Filters.InlineRuntime)
    inlineRuntime();
  return true;
}

PreservedAnalyses DeviceTwinsPass::run(Module &M, ModuleAnalysisManager &) {
  if (compat::typedPointers(M.getContext()))
    return PreservedAnalyses::all();
  Triple TT = compat::targetTriple(M);
  DevTarget T = TT.isAMDGPU()  ? DevTarget::AMDGPU
                : TT.isNVPTX() ? DevTarget::NVPTX
                               : DevTarget::Host;
  if (TT.isSPIRV())
    return PreservedAnalyses::all();
  DeviceTwins D(M, T);
  return D.run() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

void nano::registerDeviceInstrumentation(PassBuilder &PB) {
  compat::registerModulePass<DeviceTwinsPass>(PB, "nano-device", compat::PassPoint::OptimizerLast);
}
