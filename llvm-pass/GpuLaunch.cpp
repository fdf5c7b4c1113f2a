//===- GpuLaunch.cpp - GPU kernel launches routed to the runtime ----------===//
//
// The host half of kernel twins for CUDA and HIP (nano/gpu_launch.h). In the
// host module of a CUDA or HIP compilation, clang registers every kernel from
// the module constructor,
//
//   __cudaRegisterFunction(module, kernel_handle, "dev_name", "dev_name", -1, 0...)
//
// (HIP: __hipRegisterFunction), and launches it with
//
//   cudaLaunchKernel(kernel_handle, grid_xy, grid_z, block_xy, block_z, args, shared, stream)
//
// (HIP: hipLaunchKernel) in its launch stub and wherever the program calls the
// launch API itself. For every kernel the device filter selects (NANO_KERNELS,
// the same as on the device side, which gives exactly those kernels a twin)
// this pass
//   - registers the twin right after the kernel, with the same call, module
//     and flags: a host handle of its own (nano.twin.handle.<name>, one
//     private byte) and the twin's device name (twinName);
//   - turns each launch whose kernel is a constant handle of such a kernel
//     into
//       &__nano_gpu_launch != null
//         ? __nano_gpu_launch(api, launch, handle, twin handle, "dev_name", grid...,
//                             args, nargs, shared, stream)
//         : <the launch, unchanged>
//     with launch the launch function the call named (the program's own:
//     with a static cudart the runtime has no other) and nargs the kernel's
//     parameter count (its stub's).
// __nano_gpu_launch is extern_weak: without the runtime the program launches
// exactly as before. With -fgpu-rdc and the new offload driver, which
// registers kernels at link time from offload entries, the twin gets an
// entry beside its kernel's instead (entryTwins). Cooperative launches (the
// same shape) are routed the same way; cudaLaunchKernelExC
// (cudaLaunchKernelEx's templates call it: config, kernel, args) through
// __nano_gpu_launch_ex, the twin launched with the program's configuration,
// attributes included; hipExtLaunchKernel (events and flags after the
// stream) through __nano_gpu_launch_events, the twin launched with the
// program's events; multi-device launches (a list of launches) through
// __nano_gpu_launch_multi, each launch's twin looked up by the runtime;
// launches through a handle that is not a constant (a
// function pointer in a variable, the templates' parameter) are looked up by
// the runtime. Kernel nodes added to a graph by hand (cudaGraphAddKernelNode,
// hipGraphAddKernelNode and the calls that get and set their parameters) go
// through __nano_gpu_graph_add_kernel and __nano_gpu_graph_kernel_params:
// the runtime puts the twin's nodes in as one child graph node. Launch calls
// of other shapes (cuLaunchKernel, hipModuleLaunchKernel: functions of
// modules) are not routed: the compile says so at each (GpuApi::Unrouted). Calls that
// configure a kernel (cudaFuncSetAttribute, ...) are mirrored to its twin;
// calls that add a graph node go through __nano_gpu_graph_add_node, which
// learns conditional nodes' bodies (no twin may be captured there) and puts
// a kernel node's twin in as cudaGraphAddKernelNode's.
//
// Runs at the start of the pipeline (before the stubs are inlined into their
// callers), also at -O0, and as `opt -passes=nano-gpu-launch`.
//
//===----------------------------------------------------------------------===//
#include "Compat.h"
#include "DeviceOptions.h"
#include "Passes.h"
#include "SourceFile.h"

#include "nano/dh_format.h"
#include "nano/gpu_launch.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <string>
#include <vector>

using namespace llvm;

#define DEBUG_TYPE "nano-gpu-launch"

ALWAYS_ENABLED_STATISTIC(NumGpuTwinsRegistered, "GPU kernel twins registered on the host");
ALWAYS_ENABLED_STATISTIC(NumGpuStubLaunchesRouted,
                         "GPU kernel launch stubs routed to the runtime (<<<>>>, "
                         "hipLaunchKernelGGL; called or not)");
ALWAYS_ENABLED_STATISTIC(NumGpuCallLaunchesRouted,
                         "GPU launch calls of the program routed to the runtime");
ALWAYS_ENABLED_STATISTIC(NumGpuLaunchesNotRouted,
                         "GPU launch calls not routed (each said at compile time)");
ALWAYS_ENABLED_STATISTIC(NumGpuAddNodeRouted,
                         "graph node calls routed to the runtime (conditional bodies)");
ALWAYS_ENABLED_STATISTIC(NumGpuKernelNodeCallsRouted,
                         "kernel node calls of graphs built by hand routed to the runtime");
ALWAYS_ENABLED_STATISTIC(NumGpuConfigureMirrored,
                         "GPU kernel configuration calls mirrored to the twins");

namespace {

const char *const RuntimeLaunch = "__nano_gpu_launch";
const char *const RuntimeLaunchEx = "__nano_gpu_launch_ex";
const char *const RuntimeLaunchEvents = "__nano_gpu_launch_events";
const char *const RuntimeLaunchMulti = "__nano_gpu_launch_multi";
const char *const RuntimeRegister = "__nano_gpu_register";

const char *const RuntimeApi = "__nano_gpu_api";
const char *const RuntimeTwinOf = "__nano_gpu_twin_of";
const char *const RuntimeAddNode = "__nano_gpu_graph_add_node";
const char *const RuntimeAddKernel = "__nano_gpu_graph_add_kernel";
const char *const RuntimeKernelParams = "__nano_gpu_graph_kernel_params";
const char *const RuntimeKernelNode = "__nano_gpu_graph_kernel_node";

// One launch API: its registration call, its launch calls (the second on the
// per-thread default stream: clang's -fgpu-default-stream=per-thread), its
// last-error calls and error names, and the calls that configure a kernel
// through its handle (the twin must be configured the same to launch where
// the kernel does: 64 KiB of dynamic shared memory needs the attribute).
// A launch call the pass routes: every one has cudaLaunchKernel's shape
// (kernel, grid, block, args, shared, stream), so the runtime launches the
// twin through the same function: a cooperative launch stays cooperative.
struct GpuLaunchCall {
  const char *Name;
  bool PerThread; // the per-thread default stream's variant
};

// A launch call the pass does not route, and why: the kernels it launches
// run uninstrumented, which the compile says at each call.
struct GpuUnrouted {
  const char *Name, *Why;
};

struct GpuApi {
  int Id; // enum nano_gpu_api
  const char *Register;
  GpuLaunchCall Launches[4];
  // launch calls with a configuration (cudaLaunchKernelExC's shape: config,
  // kernel, args), routed through __nano_gpu_launch_ex
  GpuLaunchCall ConfiguredLaunches[2];
  // launch calls with events and flags after the stream (hipExtLaunchKernel),
  // routed through __nano_gpu_launch_events
  GpuLaunchCall EventLaunches[1];
  // multi-device launch calls (list, count, flags: a list of
  // nano_gpu_launch_params), routed through __nano_gpu_launch_multi
  const char *MultiLaunches[2];
  const char *GetLastError, *PeekAtLastError, *GetErrorName;
  const char *Configure[3];
  GpuUnrouted Unrouted[9];
  // the calls that add a node to a graph (cudaGraphAddNode's shapes: with
  // and without the edges' data), routed through __nano_gpu_graph_add_node:
  // the runtime learns conditional nodes' bodies, into which a twin cannot
  // be captured
  struct {
    const char *Name;
    bool Driver; // the driver's: its kernels have no twins of the plugin's
  } AddNode[4];
  // the calls of kernel nodes added to a graph by hand (null: not routed,
  // said among Unrouted): added through __nano_gpu_graph_add_kernel (the
  // twin's nodes captured with Launches[0]), their parameters got and set
  // through __nano_gpu_graph_kernel_params
  struct {
    const char *Add, *Get, *Set, *ExecSet;
    // the generic calls' set and executable set (a kernel node's parameters
    // among others'), routed the same way
    const char *GenericSet, *GenericExecSet;
    // the other calls on kernel nodes (attributes): their node arguments
    // (NodeArgs, a bit per argument) go through __nano_gpu_graph_kernel_node
    struct {
      const char *Name;
      unsigned NumParams, NodeArgs;
    } NodeCalls[3];
  } KernelNodes;
};

const char *const WhyModule = "a function looked up in a module at run time has no twin of the "
                              "plugin's; `nanoprobe run -i -c CACHE` gives it a kernel cache's";

const GpuApi Apis[] = {
    {NANO_GPU_CUDA,
     "__cudaRegisterFunction",
     {{"cudaLaunchKernel", false},
      {"cudaLaunchKernel_ptsz", true},
      {"cudaLaunchCooperativeKernel", false},
      {"cudaLaunchCooperativeKernel_ptsz", true}},
     {{"cudaLaunchKernelExC", false}, {"cudaLaunchKernelExC_ptsz", true}},
     {},
     {"cudaLaunchCooperativeKernelMultiDevice"},
     "cudaGetLastError",
     "cudaPeekAtLastError",
     "cudaGetErrorName",
     {"cudaFuncSetAttribute", "cudaFuncSetCacheConfig", "cudaFuncSetSharedMemConfig"},
     {{"cuLaunchKernel", WhyModule},
      {"cuLaunchKernelEx", WhyModule},
      {"cuLaunchCooperativeKernel", WhyModule},
      {"cuLaunchCooperativeKernelMultiDevice", WhyModule}},
     {{"cudaGraphAddNode", false},
      {"cudaGraphAddNode_v2", false},
      {"cuGraphAddNode", true},
      {"cuGraphAddNode_v2", true}},
     {"cudaGraphAddKernelNode",
      "cudaGraphKernelNodeGetParams",
      "cudaGraphKernelNodeSetParams",
      "cudaGraphExecKernelNodeSetParams",
      "cudaGraphNodeSetParams",
      "cudaGraphExecNodeSetParams",
      {{"cudaGraphKernelNodeSetAttribute", 3, 1},
       {"cudaGraphKernelNodeGetAttribute", 3, 1},
       {"cudaGraphKernelNodeCopyAttributes", 2, 3}}}},
    {NANO_GPU_HIP,
     "__hipRegisterFunction",
     {{"hipLaunchKernel", false},
      {"hipLaunchKernel_spt", true},
      {"hipLaunchCooperativeKernel", false},
      {"hipLaunchCooperativeKernel_spt", true}},
     {{"hipLaunchKernelExC", false}},
     {{"hipExtLaunchKernel", false}},
     {"hipLaunchCooperativeKernelMultiDevice", "hipExtLaunchMultiKernelMultiDevice"},
     "hipGetLastError",
     "hipPeekAtLastError",
     "hipGetErrorName",
     {"hipFuncSetAttribute", "hipFuncSetCacheConfig", "hipFuncSetSharedMemConfig"},
     {{"hipModuleLaunchKernel", WhyModule},
      {"hipExtModuleLaunchKernel", WhyModule},
      {"hipModuleLaunchCooperativeKernel", WhyModule},
      {"hipModuleLaunchCooperativeKernelMultiDevice", WhyModule},
      {"hipHccModuleLaunchKernel", WhyModule}},
     {{"hipGraphAddNode", false}},
     {"hipGraphAddKernelNode",
      "hipGraphKernelNodeGetParams",
      "hipGraphKernelNodeSetParams",
      "hipGraphExecKernelNodeSetParams",
      "hipGraphNodeSetParams",
      "hipGraphExecNodeSetParams",
      {{"hipGraphKernelNodeSetAttribute", 3, 1}, {"hipGraphKernelNodeGetAttribute", 3, 1}}}}};

// A registered kernel: its device name, its twin's host handle and its
// parameter count.
struct GpuKernel {
  Constant *Name;
  GlobalVariable *TwinHandle;
  unsigned NumArgs;
};

struct GpuLaunchPass : PassInfoMixin<GpuLaunchPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &);
};

// The launch stub of a kernel handle: the handle itself (CUDA) or the function
// a HIP handle variable holds; null when neither.
Function *stubOf(Value *Handle) {
  Value *V = Handle->stripPointerCasts();
  if (auto *F = dyn_cast<Function>(V))
    return F;
  if (auto *GV = dyn_cast<GlobalVariable>(V))
    if (GV->hasInitializer())
      return dyn_cast<Function>(GV->getInitializer()->stripPointerCasts());
  return nullptr;
}

// The extern_weak declaration of runtime entry Name of type Ty; null, after an
// error naming it, when the module declares it with another type.
Function *runtimeEntry(Module &M, const char *Name, FunctionType *Ty) {
  Function *F = M.getFunction(Name);
  if (!F)
    return Function::Create(Ty, GlobalValue::ExternalWeakLinkage, Name, M);
  if (F->getFunctionType() == Ty)
    return F;
  M.getContext().emitError(std::string("nanoprobe: ") + Name + " is declared with another type");
  return nullptr;
}

// Emits `if (&Name) Name(Args)` before I for the extern_weak runtime entry
// Name returning void (nothing where the module declares it with another
// type: runtimeEntry said so).
void emitIfRuntime(Module &M, Instruction *I, const char *Name, ArrayRef<Value *> Args) {
  SmallVector<Type *, 5> Params;
  for (Value *A : Args)
    Params.push_back(A->getType());
  FunctionType *Ty = FunctionType::get(Type::getVoidTy(M.getContext()), Params, false);
  Function *F = runtimeEntry(M, Name, Ty);
  if (!F)
    return;
  IRBuilder<> B(I);
  Value *Present = B.CreateICmpNE(F, ConstantPointerNull::get(F->getType()), "nano.gpu.runtime");
  IRBuilder<> TB(SplitBlockAndInsertIfThen(Present, I, false));
  TB.CreateCall(Ty, F, Args);
}

// Emits `if (&__nano_gpu_register) __nano_gpu_register(api, kernel, twin,
// name, nargs)` before I: the runtime learns which twin a kernel handle has,
// for launches through a handle that is not a constant.
void emitRuntimeRegistration(Module &M, Instruction *I, int Api, Value *Handle, Constant *Name,
                             GlobalVariable *Twin, unsigned NumArgs) {
  Type *I32 = Type::getInt32Ty(M.getContext());
  emitIfRuntime(M, I, RuntimeRegister,
                {ConstantInt::get(I32, Api), Handle, Twin, Name, ConstantInt::get(I32, NumArgs)});
}

// Emits `if (&__nano_gpu_api) __nano_gpu_api(api, GetLastError,
// PeekAtLastError, GetErrorName)` before I: the runtime clears the error a
// twin's failed launch leaves (the program would read it as its own) and
// names it, with the program's own copies of the API (a static cudart too).
void emitRuntimeApi(Module &M, Instruction *I, const GpuApi &Api) {
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  FunctionCallee Get = M.getOrInsertFunction(Api.GetLastError, FunctionType::get(I32, false));
  FunctionCallee Peek = M.getOrInsertFunction(Api.PeekAtLastError, FunctionType::get(I32, false));
  FunctionCallee Name =
      M.getOrInsertFunction(Api.GetErrorName, FunctionType::get(Ptr, {I32}, false));
  emitIfRuntime(
      M, I, RuntimeApi,
      {ConstantInt::get(I32, Api.Id), Get.getCallee(), Peek.getCallee(), Name.getCallee()});
}

// Mirrors each call that configures a kernel through its handle
// (cudaFuncSetAttribute, ...) to the kernel's twin: right after a call that
// succeeded, the same call with the twin's handle, whose failure is cleared
// from the API's last error. The twin of a constant handle is known here; a
// handle that is no constant (the C++ wrappers of the API pass theirs on) is
// looked up by the runtime (__nano_gpu_twin_of, extern_weak: no runtime, no
// twin to configure). Returns whether a call was mirrored.
bool mirrorConfiguration(Module &M, const GpuApi &Api,
                         const DenseMap<Value *, GpuKernel> &Kernels) {
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  bool Changed = false;
  for (const char *Name : Api.Configure) {
    Function *Configure = M.getFunction(Name);
    if (!Configure || Configure->arg_size() < 1 || !Configure->getReturnType()->isIntegerTy() ||
        !Configure->getArg(0)->getType()->isPointerTy())
      continue;
    std::vector<CallInst *> Calls;
    for (User *U : Configure->users())
      if (auto *CI = dyn_cast<CallInst>(U))
        if (CI->getCalledFunction() == Configure)
          Calls.push_back(CI);
    for (CallInst *CI : Calls) {
      Value *Handle = CI->getArgOperand(0)->stripPointerCasts();
      auto Known = Kernels.find(Handle);
      if (Known == Kernels.end() && isa<Constant>(Handle))
        continue; // a kernel without a twin
      IRBuilder<> B(CI->getNextNode());
      B.SetCurrentDebugLocation(CI->getDebugLoc());
      Value *Twin;
      if (Known != Kernels.end()) {
        Twin = Known->second.TwinHandle;
      } else {
        FunctionType *Ty = FunctionType::get(Ptr, {I32, Ptr}, false);
        Function *TwinOf = runtimeEntry(M, RuntimeTwinOf, Ty);
        if (!TwinOf)
          return Changed;
        // the runtime's answer where it is loaded, else no twin
        Value *Present = B.CreateICmpNE(TwinOf, ConstantPointerNull::get(TwinOf->getType()));
        Instruction *Then = SplitBlockAndInsertIfThen(Present, &*B.GetInsertPoint(), false);
        IRBuilder<> TB(Then);
        Value *Found =
            TB.CreateCall(Ty, TwinOf, {ConstantInt::get(I32, Api.Id), CI->getArgOperand(0)});
        B.SetInsertPoint(&*Then->getParent()->getSingleSuccessor()->getFirstInsertionPt());
        PHINode *Phi = B.CreatePHI(Ptr, 2, "nano.gpu.twin");
        Phi->addIncoming(Found, Then->getParent());
        Phi->addIncoming(ConstantPointerNull::get(Ptr), cast<Instruction>(Present)->getParent());
        Twin = Phi;
      }
      Value *Ok = B.CreateAnd(B.CreateICmpEQ(CI, ConstantInt::get(CI->getType(), 0)),
                              B.CreateIsNotNull(Twin), "nano.gpu.configure.twin");
      Instruction *Then = SplitBlockAndInsertIfThen(Ok, &*B.GetInsertPoint(), false);
      IRBuilder<> TB(Then);
      SmallVector<Value *, 4> Args(CI->args());
      Args[0] = Twin;
      CallInst *Mirrored = TB.CreateCall(CI->getFunctionType(), Configure, Args);
      Mirrored->setCallingConv(CI->getCallingConv());
      Mirrored->setAttributes(CI->getAttributes());
      // the twin's failure is not the program's: out of the last error
      Instruction *Clear = SplitBlockAndInsertIfThen(
          TB.CreateICmpNE(Mirrored, ConstantInt::get(Mirrored->getType(), 0)), Then, false);
      IRBuilder<> CB(Clear);
      CB.CreateCall(M.getOrInsertFunction(Api.GetLastError, FunctionType::get(I32, false)));
      ++NumGpuConfigureMirrored;
      Changed = true;
    }
  }
  return Changed;
}

// Whether the kernel of host handle Handle and device name Name gets a twin:
// not known yet, no twin itself, selected by the filters.
bool wantsTwin(const DenseMap<Value *, GpuKernel> &Kernels, Value *Handle, StringRef Name,
               const nano::DeviceFilters &Filters) {
  return !Kernels.count(Handle) && !nano::compat::startsWith(Name, NANO_TWIN_PREFIX) &&
         Filters.kernelSelected(Name);
}

// A twin's host handle: one private byte, named after kernel Name.
GlobalVariable *newTwinHandle(Module &M, StringRef Name) {
  Type *I8 = Type::getInt8Ty(M.getContext());
  return new GlobalVariable(M, I8, false, GlobalValue::PrivateLinkage, ConstantInt::get(I8, 0),
                            "nano.twin.handle." + Name);
}

// Registers the twins of the selected kernels registered by calls to Reg.
DenseMap<Value *, GpuKernel> registerTwins(Module &M, Function *Reg, const GpuApi &Api,
                                           const nano::DeviceFilters &Filters) {
  DenseMap<Value *, GpuKernel> Kernels;
  std::vector<CallInst *> Calls;
  for (User *U : Reg->users())
    if (auto *CI = dyn_cast<CallInst>(U))
      if (CI->getCalledFunction() == Reg && CI->arg_size() == 10)
        Calls.push_back(CI);
  for (CallInst *CI : Calls) {
    Value *Handle = CI->getArgOperand(1)->stripPointerCasts();
    StringRef Name = nano::compat::constantString(CI->getArgOperand(2));
    auto *NameConst = dyn_cast<Constant>(CI->getArgOperand(2));
    Function *Stub = stubOf(Handle);
    if (Name.empty() || !NameConst || !Stub || !wantsTwin(Kernels, Handle, Name, Filters))
      continue;
    std::string Twin = nano::twinName(Name);
    GlobalVariable *TwinHandle = newTwinHandle(M, Name);
    IRBuilder<> B(CI->getNextNode());
    Constant *TwinName = B.CreateGlobalString(Twin, "nano.twin.name");
    SmallVector<Value *, 10> Args(CI->args());
    Args[1] = TwinHandle;
    Args[2] = TwinName;
    Args[3] = TwinName;
    CallInst *TwinReg = B.CreateCall(Reg->getFunctionType(), Reg, Args);
    unsigned NumArgs = static_cast<unsigned>(Stub->arg_size());
    if (Kernels.empty())
      emitRuntimeApi(M, TwinReg->getNextNode(), Api);
    Kernels[Handle] = {NameConst, TwinHandle, NumArgs};
    emitRuntimeRegistration(M, TwinReg->getNextNode(), Api.Id, CI->getArgOperand(1), NameConst,
                            TwinHandle, NumArgs);
    ++NumGpuTwinsRegistered;
  }
  return Kernels;
}

// Offload entries: -fgpu-rdc with the new offload driver (clang-22's
// default there; hipcc's --offload-new-driver) registers nothing in the
// module. clang leaves one entry per kernel and device variable in a named
// section instead, and clang-linker-wrapper generates, at link time, the
// constructor that registers every entry of that section, kernels with
// __cudaRegisterFunction(module, entry address, entry name, ...). An entry's
// layout differs between clang versions (clang 15: {address, name, size,
// flags, reserved}; clang 22: {reserved, version, kind, flags, address,
// name, size, data, aux}); read here only through its operands: the
// kernel's handle (stubOf finds its stub) and its name (a C string).
const char *const EntrySections[] = {"llvm_offload_entries", "cuda_offloading_entries",
                                     "hip_offloading_entries"};
// clang 22's offload kinds (llvm/Object/OffloadBinary.h: OFK_Cuda, OFK_HIP),
// the entry's second 16-bit field, in its one shared section
const uint64_t EntryKindCuda = 2, EntryKindHip = 3;

// Whether offload entry GV (in one of EntrySections) is one of Api's.
bool entryOfApi(const GlobalVariable &GV, const GpuApi &Api) {
  StringRef Section = GV.getSection();
  if (Section == "cuda_offloading_entries")
    return Api.Id == NANO_GPU_CUDA;
  if (Section == "hip_offloading_entries")
    return Api.Id == NANO_GPU_HIP;
  auto *Entry = dyn_cast<ConstantStruct>(GV.getInitializer());
  unsigned Shorts = 0;
  for (unsigned I = 0; Entry && I < Entry->getNumOperands(); I++)
    if (auto *C = dyn_cast<ConstantInt>(Entry->getOperand(I)))
      if (C->getBitWidth() == 16 && ++Shorts == 2)
        return C->getZExtValue() == (Api.Id == NANO_GPU_CUDA ? EntryKindCuda : EntryKindHip);
  return false;
}

// Gives each selected kernel with an offload entry of Api a twin entry
// beside it (the twin's handle and device name, the kernel's kind, flags
// and section: the linker's constructor registers the twin as it registers
// the kernel), and announces kernels and twins to the runtime from a
// constructor of this module, as registerTwins does after each
// registration. Adds the kernels to Kernels.
void entryTwins(Module &M, const GpuApi &Api, const nano::DeviceFilters &Filters,
                DenseMap<Value *, GpuKernel> &Kernels) {
  std::vector<GlobalVariable *> Entries;
  for (GlobalVariable &GV : M.globals())
    if (GV.hasInitializer() && llvm::is_contained(EntrySections, GV.getSection()) &&
        entryOfApi(GV, Api))
      Entries.push_back(&GV);
  LLVMContext &Ctx = M.getContext();
  Function *Ctor = nullptr;
  for (GlobalVariable *GV : Entries) {
    auto *Entry = dyn_cast<ConstantStruct>(GV->getInitializer());
    if (!Entry)
      continue;
    int HandleAt = -1, NameAt = -1;
    for (unsigned I = 0; I < Entry->getNumOperands(); I++) {
      Constant *Op = Entry->getOperand(I);
      if (HandleAt < 0 && Op->getType()->isPointerTy() && stubOf(Op))
        HandleAt = static_cast<int>(I);
      else if (NameAt < 0 && !nano::compat::constantString(Op).empty())
        NameAt = static_cast<int>(I);
    }
    if (HandleAt < 0 || NameAt < 0)
      continue; // a device variable's entry
    Constant *Handle = Entry->getOperand(HandleAt);
    Constant *NameConst = Entry->getOperand(NameAt);
    auto *NameGV = cast<GlobalVariable>(NameConst->stripPointerCasts());
    StringRef Name = nano::compat::constantString(NameConst);
    if (!wantsTwin(Kernels, Handle->stripPointerCasts(), Name, Filters))
      continue;
    GlobalVariable *TwinHandle = newTwinHandle(M, Name);
    Constant *TwinString = ConstantDataArray::getString(Ctx, nano::twinName(Name));
    auto *TwinName = new GlobalVariable(M, TwinString->getType(), true, NameGV->getLinkage(),
                                        TwinString, "nano.twin.name");
    TwinName->copyAttributesFrom(NameGV);
    if (NamedMDNode *Symbols = M.getNamedMetadata("llvm.offloading.symbols"))
      Symbols->addOperand(MDNode::get(Ctx, {ConstantAsMetadata::get(TwinName)}));
    SmallVector<Constant *, 9> Ops;
    for (unsigned I = 0; I < Entry->getNumOperands(); I++)
      Ops.push_back(Entry->getOperand(I));
    Ops[HandleAt] = ConstantExpr::getPointerBitCastOrAddrSpaceCast(TwinHandle, Handle->getType());
    Ops[NameAt] = ConstantExpr::getPointerBitCastOrAddrSpaceCast(TwinName, NameConst->getType());
    auto *TwinEntry = new GlobalVariable(M, Entry->getType(), true, GV->getLinkage(),
                                         ConstantStruct::get(Entry->getType(), Ops),
                                         GV->getName() + ".nano_twin");
    TwinEntry->copyAttributesFrom(GV);
    unsigned NumArgs = static_cast<unsigned>(stubOf(Handle)->arg_size());
    if (!Ctor) {
      Ctor = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false),
                              GlobalValue::InternalLinkage, "nano.gpu.entry.twins", M);
      ReturnInst::Create(Ctx, BasicBlock::Create(Ctx, "", Ctor));
      appendToGlobalCtors(M, Ctor, 65535);
      emitRuntimeApi(M, Ctor->getEntryBlock().getTerminator(), Api);
    }
    Kernels[Handle->stripPointerCasts()] = {NameConst, TwinHandle, NumArgs};
    emitRuntimeRegistration(M, Ctor->getEntryBlock().getTerminator(), Api.Id, Handle, NameConst,
                            TwinHandle, NumArgs);
    ++NumGpuTwinsRegistered;
  }
}

// Where the program makes call CB: CB itself, or, where CB is in a wrapper
// from the API's own headers (cudaLaunchKernelEx's C++ templates call one
// another, then cudaLaunchKernelExC), the calls of the wrapper, up to the
// program's own code.
void programCalls(CallBase *CB, SmallVectorImpl<Instruction *> &Out, unsigned Depth = 0) {
  const unsigned MaxWrappers = 8; // nesting of header wrappers followed at most
  Function *Wrapper = CB->getFunction();
  const DebugLoc &L = CB->getDebugLoc();
  bool InLibrary = L && nano::libraryLocation(L.get());
  size_t Before = Out.size();
  if (InLibrary && Depth < MaxWrappers &&
      (Wrapper->hasLocalLinkage() || Wrapper->hasLinkOnceLinkage()))
    for (User *U : Wrapper->users())
      if (auto *Caller = dyn_cast<CallBase>(U))
        if (Caller->getCalledFunction() == Wrapper)
          programCalls(Caller, Out, Depth + 1);
  if (Out.size() == Before)
    Out.push_back(CB);
}

// The function `Name` of M: declared in C, or in C++ as a free function
// (Itanium's _Z<length><name>..., as HIP declares hipExtModuleLaunchKernel).
Function *apiFunction(const Module &M, StringRef Name) {
  if (Function *F = M.getFunction(Name))
    return F;
  std::string Mangled = ("_Z" + Twine(Name.size()) + Name).str();
  for (const Function &F : M)
    if (F.isDeclaration() && F.getName().substr(0, Mangled.size()) == Mangled)
      return const_cast<Function *>(&F);
  return nullptr;
}

// Says at each call of a launch the pass does not route that its kernels run
// uninstrumented, and why.
void sayUnrouted(Module &M, const GpuApi &Api) {
  for (const GpuUnrouted &U : Api.Unrouted) {
    Function *F = U.Name ? apiFunction(M, U.Name) : nullptr;
    if (!F)
      continue;
    for (User *Us : F->users()) {
      auto *CB = dyn_cast<CallBase>(Us);
      if (!CB || CB->getCalledFunction() != F)
        continue;
      SmallVector<Instruction *, 2> Calls;
      programCalls(CB, Calls);
      for (Instruction *At : Calls) {
        std::string Where = ("in " + At->getFunction()->getName() + ": ").str();
        if (const DebugLoc &L = At->getDebugLoc())
          Where = (L->getFilename() + ":" + Twine(L->getLine()) + ": ").str();
        nano::warning(M.getContext(), Twine("nanoprobe: ") + Where + U.Name +
                                          ": the kernels it launches run uninstrumented (" + U.Why +
                                          ")");
        ++NumGpuLaunchesNotRouted;
      }
    }
  }
}

// The calls of Launch (NumParams parameters, the kernel's handle at
// HandleAt) to route: constant handles of kernels with twins, and handles
// that are no constant (the runtime looks their twin up:
// __nano_gpu_register).
std::vector<CallInst *> launchCalls(Function *Launch, unsigned NumParams, unsigned HandleAt,
                                    const DenseMap<Value *, GpuKernel> &Kernels) {
  std::vector<CallInst *> Calls;
  for (User *U : Launch->users())
    if (auto *CI = dyn_cast<CallInst>(U)) {
      if (CI->getCalledFunction() != Launch || CI->arg_size() != NumParams)
        continue;
      Value *Handle = CI->getArgOperand(HandleAt)->stripPointerCasts();
      if (Kernels.count(Handle) || !isa<Constant>(Handle))
        Calls.push_back(CI);
    }
  return Calls;
}

// Turns call CI into `&Route != null ? Route(Args(then-builder)) : CI` (CI
// unchanged in the else branch).
void routeThrough(CallInst *CI, Function *Route, FunctionType *RouteTy,
                  function_ref<SmallVector<Value *, 13>(IRBuilder<> &)> Args) {
  IRBuilder<> B(CI);
  Value *Present =
      B.CreateICmpNE(Route, ConstantPointerNull::get(Route->getType()), "nano.gpu.runtime");
  Instruction *ThenTerm = nullptr, *ElseTerm = nullptr;
  SplitBlockAndInsertIfThenElse(Present, CI, &ThenTerm, &ElseTerm);
  // the launch itself goes to the else block, unchanged
  nano::compat::moveBefore(CI, ElseTerm);
  IRBuilder<> TB(ThenTerm);
  TB.SetCurrentDebugLocation(CI->getDebugLoc());
  CallInst *Routed = TB.CreateCall(RouteTy, Route, Args(TB), "nano.gpu.launch");
  BasicBlock *Join = ElseTerm->getSuccessor(0);
  IRBuilder<> JB(&*Join->getFirstInsertionPt());
  PHINode *Result = JB.CreatePHI(CI->getType(), 2, "nano.gpu.result");
  CI->replaceAllUsesWith(Result);
  Result->addIncoming(TB.CreateZExtOrTrunc(Routed, CI->getType()), ThenTerm->getParent());
  Result->addIncoming(CI, ElseTerm->getParent());
}

// routeThrough for launch call CI, counting it as a stub's or a call of the
// program's. Handle: the launched kernel's handle.
void routeCall(CallInst *CI, Function *Route, FunctionType *RouteTy, Value *Handle,
               const DenseMap<Value *, GpuKernel> &Kernels,
               function_ref<SmallVector<Value *, 13>(IRBuilder<> &)> Args) {
  routeThrough(CI, Route, RouteTy, Args);
  // a kernel's launch stub (<<<>>>, hipLaunchKernelGGL) is there whether
  // or not the program calls it: counted apart from the program's calls
  auto Known = Kernels.find(Handle);
  if (Known != Kernels.end() && CI->getFunction() == stubOf(Known->first))
    ++NumGpuStubLaunchesRouted;
  else
    ++NumGpuCallLaunchesRouted;
}

// What __nano_gpu_launch(_ex) is told of a kernel handle: its twin's handle,
// its device name and parameter count, or NULL, NULL, 0 (the runtime looks
// them up).
struct RoutedKernel {
  Value *Twin, *Name;
  unsigned NumArgs;
};
RoutedKernel routedKernel(Value *Handle, const DenseMap<Value *, GpuKernel> &Kernels,
                          PointerType *Ptr) {
  auto Known = Kernels.find(Handle->stripPointerCasts());
  if (Known == Kernels.end())
    return {ConstantPointerNull::get(Ptr), ConstantPointerNull::get(Ptr), 0};
  return {Known->second.TwinHandle, Known->second.Name, Known->second.NumArgs};
}

// Routes the launches of registered kernels through the runtime:
// cudaLaunchKernel's shape through __nano_gpu_launch, or, with Events,
// hipExtLaunchKernel's (three more: start and stop events, flags) through
// __nano_gpu_launch_events. Id: the api argument (the API's, with
// NANO_GPU_PER_THREAD for the per-thread launch call).
bool routeLaunches(Module &M, int Id, Function *Launch, const DenseMap<Value *, GpuKernel> &Kernels,
                   bool Events = false) {
  const unsigned EventArgs = 3; // start, stop, flags
  std::vector<CallInst *> Calls = launchCalls(Launch, Events ? 8 + EventArgs : 8, 0, Kernels);
  if (Calls.empty())
    return false;
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  SmallVector<Type *, 16> Params = {I32, Ptr, Ptr, Ptr, Ptr, I64, I32,
                                    I64, I32, Ptr, I32, I64, Ptr};
  if (Events)
    Params.append({Ptr, Ptr, I32});
  FunctionType *RouteTy = FunctionType::get(I32, Params, false);
  Function *Route = runtimeEntry(M, Events ? RuntimeLaunchEvents : RuntimeLaunch, RouteTy);
  if (!Route)
    return false;
  for (CallInst *CI : Calls) {
    RoutedKernel K = routedKernel(CI->getArgOperand(0), Kernels, Ptr);
    routeCall(CI, Route, RouteTy, CI->getArgOperand(0)->stripPointerCasts(), Kernels,
              [&](IRBuilder<> &TB) {
                auto Arg = [&](unsigned I, Type *Ty) {
                  return TB.CreateZExtOrTrunc(CI->getArgOperand(I), Ty);
                };
                SmallVector<Value *, 13> Args = {ConstantInt::get(I32, Id),
                                                 Launch,
                                                 CI->getArgOperand(0),
                                                 K.Twin,
                                                 K.Name,
                                                 Arg(1, I64),
                                                 Arg(2, I32),
                                                 Arg(3, I64),
                                                 Arg(4, I32),
                                                 CI->getArgOperand(5),
                                                 ConstantInt::get(I32, K.NumArgs),
                                                 Arg(6, I64),
                                                 CI->getArgOperand(7)};
                if (Events)
                  Args.append({CI->getArgOperand(8), CI->getArgOperand(9), Arg(10, I32)});
                return Args;
              });
  }
  return true;
}

// Routes the configured launches (cudaLaunchKernelExC: config, kernel, args)
// of registered kernels through __nano_gpu_launch_ex.
bool routeConfiguredLaunches(Module &M, int Id, Function *Launch,
                             const DenseMap<Value *, GpuKernel> &Kernels) {
  std::vector<CallInst *> Calls = launchCalls(Launch, 3, 1, Kernels);
  if (Calls.empty())
    return false;
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  FunctionType *RouteTy = FunctionType::get(I32, {I32, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, I32}, false);
  Function *Route = runtimeEntry(M, RuntimeLaunchEx, RouteTy);
  if (!Route)
    return false;
  for (CallInst *CI : Calls) {
    RoutedKernel K = routedKernel(CI->getArgOperand(1), Kernels, Ptr);
    routeCall(CI, Route, RouteTy, CI->getArgOperand(1)->stripPointerCasts(), Kernels,
              [&](IRBuilder<> &) {
                return SmallVector<Value *, 13>{ConstantInt::get(I32, Id),
                                                Launch,
                                                CI->getArgOperand(0),
                                                CI->getArgOperand(1),
                                                K.Twin,
                                                K.Name,
                                                CI->getArgOperand(2),
                                                ConstantInt::get(I32, K.NumArgs)};
              });
  }
  return true;
}

// A launch call's type as clang lowers it on x86-64 (kernel, grid, block,
// args, shared, stream; dim3: {i64, i32}), which __nano_gpu_launch's launch
// function has too.
FunctionType *launchCallType(LLVMContext &Ctx) {
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  return FunctionType::get(I32, {Ptr, I64, I32, I64, I32, Ptr, I64, Ptr}, false);
}

// The declaration of API function Name of type Ty in M (declared if M has
// none); null where M declares it with another type.
Function *apiDeclaration(Module &M, const char *Name, FunctionType *Ty) {
  Function *F = M.getFunction(Name);
  if (!F)
    return Function::Create(Ty, GlobalValue::ExternalLinkage, Name, M);
  return F->getFunctionType() == Ty ? F : nullptr;
}

// The calls of F (NumParams parameters, an integer result); none where F is
// null or has another shape.
std::vector<CallInst *> callsOf(Function *F, unsigned NumParams) {
  std::vector<CallInst *> Calls;
  if (!F || F->getFunctionType()->getNumParams() != NumParams || !F->getReturnType()->isIntegerTy())
    return Calls;
  for (User *U : F->users())
    if (auto *CI = dyn_cast<CallInst>(U))
      if (CI->getCalledFunction() == F && CI->arg_size() == NumParams)
        Calls.push_back(CI);
  return Calls;
}

// Routes the multi-device launch calls (list, count, flags) through
// __nano_gpu_launch_multi: every call, since the list's kernels are known
// only at run time (the runtime looks each one's twin up).
bool routeMultiLaunches(Module &M, int Id, Function *Launch) {
  std::vector<CallInst *> Calls = callsOf(Launch, 3);
  if (Calls.empty() || !Launch->getArg(0)->getType()->isPointerTy())
    return false;
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  FunctionType *RouteTy = FunctionType::get(I32, {I32, Ptr, Ptr, I32, I32}, false);
  Function *Route = runtimeEntry(M, RuntimeLaunchMulti, RouteTy);
  if (!Route)
    return false;
  for (CallInst *CI : Calls) {
    routeThrough(CI, Route, RouteTy, [&](IRBuilder<> &TB) {
      return SmallVector<Value *, 13>{ConstantInt::get(I32, Id), Launch, CI->getArgOperand(0),
                                      TB.CreateZExtOrTrunc(CI->getArgOperand(1), I32),
                                      TB.CreateZExtOrTrunc(CI->getArgOperand(2), I32)};
    });
    ++NumGpuCallLaunchesRouted;
  }
  return true;
}

// Routes the calls that add a graph node (Api.AddNode) through
// __nano_gpu_graph_add_node(api, call, with_edges, node, graph, deps, edges,
// ndeps, params). Returns whether one was.
bool routeAddNode(Module &M, const GpuApi &Api) {
  const unsigned Plain = 5, WithEdges = 6; // the two shapes' parameter counts
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  FunctionType *RouteTy =
      FunctionType::get(I32, {I32, Ptr, Ptr, I32, Ptr, Ptr, Ptr, Ptr, I64, Ptr}, false);
  bool Changed = false;
  for (const auto &A : Api.AddNode) {
    Function *Add = A.Name ? M.getFunction(A.Name) : nullptr;
    unsigned N = Add ? Add->getFunctionType()->getNumParams() : 0;
    std::vector<CallInst *> Calls = callsOf(Add, N == Plain ? Plain : WithEdges);
    Function *Route = Calls.empty() ? nullptr : runtimeEntry(M, RuntimeAddNode, RouteTy);
    if (!Route)
      continue;
    // the runtime's calls bring the program's launch call for a kernel
    // node's twin
    Value *Launch = ConstantPointerNull::get(Ptr);
    if (!A.Driver)
      if (Function *F = apiDeclaration(M, Api.Launches[0].Name, launchCallType(Ctx)))
        Launch = F;
    for (CallInst *CI : Calls)
      routeThrough(CI, Route, RouteTy, [&](IRBuilder<> &TB) {
        bool Edges = N == WithEdges;
        return SmallVector<Value *, 13>{ConstantInt::get(I32, Api.Id),
                                        Add,
                                        Launch,
                                        ConstantInt::get(I32, Edges),
                                        CI->getArgOperand(0),
                                        CI->getArgOperand(1),
                                        CI->getArgOperand(2),
                                        Edges ? CI->getArgOperand(3)
                                              : ConstantPointerNull::get(Ptr),
                                        TB.CreateZExtOrTrunc(CI->getArgOperand(Edges ? 4 : 3), I64),
                                        CI->getArgOperand(Edges ? 5 : 4)};
      });
    NumGpuAddNodeRouted += Calls.size();
    Changed = true;
  }
  return Changed;
}

// `&Entry != null ? Entry(ApiId, V) : V`, computed before I (Entry: an
// extern_weak runtime entry returning V's type).
Value *throughRuntime(Instruction *I, Function *Entry, FunctionType *Ty, Value *ApiId, Value *V) {
  IRBuilder<> B(I);
  Value *Present =
      B.CreateICmpNE(Entry, ConstantPointerNull::get(Entry->getType()), "nano.gpu.runtime");
  BasicBlock *Head = I->getParent();
  IRBuilder<> TB(SplitBlockAndInsertIfThen(Present, I, false));
  TB.SetCurrentDebugLocation(I->getDebugLoc());
  Value *Mapped = TB.CreateCall(Ty, Entry, {ApiId, V}, "nano.gpu.node");
  IRBuilder<> JB(I); // the first instruction of the block after the split
  PHINode *Result = JB.CreatePHI(V->getType(), 2, "nano.gpu.node");
  Result->addIncoming(Mapped, TB.GetInsertBlock());
  Result->addIncoming(V, Head);
  return Result;
}

// Routes the calls of kernel nodes added to a graph by hand
// (Api.KernelNodes): the add call through __nano_gpu_graph_add_kernel(api,
// add, launch, node, graph, deps, ndeps, params), with the program's launch
// call for the twin's capture; the parameter calls through
// __nano_gpu_graph_kernel_params(api, op, call, set, exec, node, params).
// Returns whether one was.
bool routeKernelNodes(Module &M, const GpuApi &Api) {
  const auto &K = Api.KernelNodes;
  if (!K.Add)
    return false;
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  Constant *ApiId = ConstantInt::get(I32, Api.Id), *Null = ConstantPointerNull::get(Ptr);
  bool Changed = false;
  std::vector<CallInst *> Adds = callsOf(M.getFunction(K.Add), 5);
  Function *Launch =
      Adds.empty() ? nullptr : apiDeclaration(M, Api.Launches[0].Name, launchCallType(Ctx));
  FunctionType *AddTy = FunctionType::get(I32, {I32, Ptr, Ptr, Ptr, Ptr, Ptr, I64, Ptr}, false);
  Function *AddRoute = Launch ? runtimeEntry(M, RuntimeAddKernel, AddTy) : nullptr;
  for (CallInst *CI : AddRoute ? Adds : std::vector<CallInst *>()) {
    routeThrough(CI, AddRoute, AddTy, [&](IRBuilder<> &TB) {
      return SmallVector<Value *, 13>{ApiId,
                                      CI->getCalledFunction(),
                                      Launch,
                                      CI->getArgOperand(0),
                                      CI->getArgOperand(1),
                                      CI->getArgOperand(2),
                                      TB.CreateZExtOrTrunc(CI->getArgOperand(3), I64),
                                      CI->getArgOperand(4)};
    });
    ++NumGpuKernelNodeCallsRouted;
    Changed = true;
  }
  FunctionType *ParamsTy = FunctionType::get(I32, {I32, I32, Ptr, Ptr, Ptr, Ptr, Ptr}, false);
  // (an executable's node is set through a copy of its child graph, whose
  // twin node the program's set call, SetName, gives the parameters)
  struct {
    const char *Name;
    int Op;
    unsigned NumParams;
    const char *SetName;
  } const ParamCalls[] = {{K.Get, NANO_GPU_NODE_GET, 2, nullptr},
                          {K.Set, NANO_GPU_NODE_SET, 2, nullptr},
                          {K.ExecSet, NANO_GPU_NODE_EXEC_SET, 3, K.Set},
                          {K.GenericSet, NANO_GPU_NODE_GENERIC_SET, 2, nullptr},
                          {K.GenericExecSet, NANO_GPU_NODE_GENERIC_EXEC_SET, 3, K.GenericSet}};
  for (const auto &P : ParamCalls) {
    std::vector<CallInst *> Calls = callsOf(P.Name ? M.getFunction(P.Name) : nullptr, P.NumParams);
    if (Calls.empty())
      continue;
    bool Exec = P.SetName != nullptr;
    Function *Set =
        Exec ? apiDeclaration(M, P.SetName, FunctionType::get(I32, {Ptr, Ptr}, false)) : nullptr;
    Function *Route = !Exec || Set ? runtimeEntry(M, RuntimeKernelParams, ParamsTy) : nullptr;
    for (CallInst *CI : Route ? Calls : std::vector<CallInst *>()) {
      routeThrough(CI, Route, ParamsTy, [&](IRBuilder<> &) {
        return SmallVector<Value *, 13>{ApiId,
                                        ConstantInt::get(I32, P.Op),
                                        CI->getCalledFunction(),
                                        Set ? static_cast<Value *>(Set) : Null,
                                        Exec ? CI->getArgOperand(0) : Null,
                                        CI->getArgOperand(Exec ? 1 : 0),
                                        CI->getArgOperand(Exec ? 2 : 1)};
      });
      ++NumGpuKernelNodeCallsRouted;
      Changed = true;
    }
  }
  FunctionType *NodeTy = FunctionType::get(Ptr, {I32, Ptr}, false);
  for (const auto &C : K.NodeCalls) {
    std::vector<CallInst *> Calls = callsOf(C.Name ? M.getFunction(C.Name) : nullptr, C.NumParams);
    Function *Route = Calls.empty() ? nullptr : runtimeEntry(M, RuntimeKernelNode, NodeTy);
    for (CallInst *CI : Route ? Calls : std::vector<CallInst *>()) {
      for (unsigned I = 0; I < C.NumParams; I++)
        if (C.NodeArgs >> I & 1)
          CI->setArgOperand(I, throughRuntime(CI, Route, NodeTy, ApiId, CI->getArgOperand(I)));
      ++NumGpuKernelNodeCallsRouted;
      Changed = true;
    }
  }
  return Changed;
}

// Whether module M calls a launch function of Api (a module with kernels
// whose registration is left to the link, or one that only launches).
bool launchesWith(const Module &M, const GpuApi &Api) {
  auto Declared = [&](const char *Name) { return Name && apiFunction(M, Name); };
  return llvm::any_of(Api.Launches, [&](const GpuLaunchCall &L) { return Declared(L.Name); }) ||
         llvm::any_of(Api.ConfiguredLaunches,
                      [&](const GpuLaunchCall &L) { return Declared(L.Name); }) ||
         llvm::any_of(Api.EventLaunches,
                      [&](const GpuLaunchCall &L) { return Declared(L.Name); }) ||
         llvm::any_of(Api.MultiLaunches, Declared) ||
         llvm::any_of(Api.Unrouted, [&](const GpuUnrouted &U) { return Declared(U.Name); }) ||
         llvm::any_of(Api.AddNode, [&](const auto &A) { return Declared(A.Name); }) ||
         Declared(Api.KernelNodes.Add);
}

PreservedAnalyses GpuLaunchPass::run(Module &M, ModuleAnalysisManager &) {
  if (!nano::compat::hostModule(M))
    return PreservedAnalyses::all();
  bool Changed = false;
  for (const GpuApi &Api : Apis) {
    Function *Reg = M.getFunction(Api.Register);
    bool Registers = Reg && Reg->getFunctionType()->getNumParams() == 10;
    if (!Registers && !launchesWith(M, Api))
      continue;
    nano::DeviceFilters Filters;
    std::string Err;
    if (!nano::parseDeviceFilters(Filters, Err)) {
      M.getContext().emitError("nanoprobe: " + Err);
      return PreservedAnalyses::all();
    }
    DenseMap<Value *, GpuKernel> Kernels;
    if (Registers)
      Kernels = registerTwins(M, Reg, Api, Filters);
    entryTwins(M, Api, Filters, Kernels);
    Changed |= !Kernels.empty();
    Changed |= mirrorConfiguration(M, Api, Kernels);
    for (const GpuLaunchCall &L : Api.Launches)
      if (Function *Launch = M.getFunction(L.Name))
        if (Launch->getFunctionType()->getNumParams() == 8)
          Changed |=
              routeLaunches(M, Api.Id | (L.PerThread ? NANO_GPU_PER_THREAD : 0), Launch, Kernels);
    for (const GpuLaunchCall &L : Api.EventLaunches)
      if (Function *Launch = L.Name ? M.getFunction(L.Name) : nullptr)
        if (Launch->getFunctionType()->getNumParams() == 11)
          Changed |= routeLaunches(M, Api.Id | (L.PerThread ? NANO_GPU_PER_THREAD : 0), Launch,
                                   Kernels, true);
    for (const GpuLaunchCall &L : Api.ConfiguredLaunches)
      if (Function *Launch = L.Name ? M.getFunction(L.Name) : nullptr)
        if (Launch->getFunctionType()->getNumParams() == 3)
          Changed |= routeConfiguredLaunches(M, Api.Id | (L.PerThread ? NANO_GPU_PER_THREAD : 0),
                                             Launch, Kernels);
    for (const char *Name : Api.MultiLaunches)
      if (Function *Launch = Name ? M.getFunction(Name) : nullptr)
        Changed |= routeMultiLaunches(M, Api.Id, Launch);
    Changed |= routeAddNode(M, Api);
    Changed |= routeKernelNodes(M, Api);
    sayUnrouted(M, Api);
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace

void nano::registerGpuLaunch(PassBuilder &PB) {
  compat::registerModulePass<GpuLaunchPass>(PB, "nano-gpu-launch",
                                            compat::PassPoint::PipelineStart);
}
