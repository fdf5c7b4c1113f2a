//===- LaunchRouting.cpp - NANO_LAUNCH of CPU kernels routed to the runtime -===//
//
// NANO_LAUNCH(grid, block, kernel(args...)) (nano/kernel.h) expands to
//
//   if (__nano_launch_route(&grid, &block, shared_bytes, nano_kernel_enter)) {
//     kernel(args...);
//   } else {
//     <every thread of the grid in order, in the calling thread>
//   }
//
// where __nano_launch_route is a static inline function returning 0: without
// this pass the launch runs serially. This pass, at the start of the pipeline
// of a host module (before the inliner folds the route away), turns each such
// launch into a decision at run time:
//
//   if (&__nano_cpu_launch != null) {          // the runtime is loaded
//     args = { arg0, arg1, ... };              // evaluated once, as a GPU's
//     __nano_cpu_launch(&nano.launch.<kernel>, &grid, &block, shared, &args);
//   } else { <serial, unchanged> }
//
// __nano_cpu_launch is declared extern_weak, so a program runs unchanged
// without the runtime. nano.launch.<kernel> is a struct nano_cpu_kernel:
// ABI, size of the argument block, the kernel's name, a per-kernel thread
// function and the address of the kernel's twin (extern_weak: null when the
// kernel's module was not built with the plugin, or the compile-time filter
// left it out). The thread function
//
//   void nano.launch.thread.<kernel>(args, desc, pos) {
//     nano_kernel_enter(pos);                  // the launching module's TLS
//     desc ? twin(args..., desc) : kernel(args...);
//   }
//
// is what the runtime calls once per kernel thread, on its worker threads.
// The runtime decides per launch: original or twin, which blocks, which
// buffer. The kernel call must be a direct call returning void; anything else
// (an indirect call, sret or inalloca arguments) keeps the serial launch and
// gets one warning. An invoked kernel (C++ with cleanups in scope) becomes a
// plain call: a kernel that throws ends the program under the runtime, since
// exceptions do not cross its worker threads.
//
//===----------------------------------------------------------------------===//
#include "Compat.h"
#include "Passes.h"

#include "nano/dh_format.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Utils/Local.h"

#include <string>
#include <vector>

using namespace llvm;

#define DEBUG_TYPE "nano-launch"

ALWAYS_ENABLED_STATISTIC(NumLaunchesRouted, "NANO_LAUNCH sites routed to the runtime");
ALWAYS_ENABLED_STATISTIC(NumLaunchesSerial, "NANO_LAUNCH sites left serial (unsupported call)");

namespace {

const char *const RouteName = "__nano_launch_route";
const char *const RuntimeLaunch = "__nano_cpu_launch";

struct LaunchRoutingPass : PassInfoMixin<LaunchRoutingPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &);
};

// The state of one run over a module.
struct LaunchRouting {
  Module &M;
  LLVMContext &Ctx;
  const DataLayout &DL;
  Type *I32, *Ptr;
  // Kernel -> its struct nano_cpu_kernel (one per kernel and module).
  DenseMap<Function *, GlobalVariable *> Launches;

  explicit LaunchRouting(Module &M)
      : M(M), Ctx(M.getContext()), DL(M.getDataLayout()), I32(Type::getInt32Ty(Ctx)),
        Ptr(PointerType::get(Ctx, 0)) {}

  bool run();
  bool route(CallInst *Route);
  CallBase *kernelCall(BranchInst *BI, std::string &Why);
  GlobalVariable *launchOf(CallBase *K, Function *Enter, StructType *Args);
  Function *threadFunction(CallBase *K, Function *Enter, StructType *Args);
  void warn(const Instruction &At, const Twine &Why);
};

} // namespace

// A warning naming the launch's place: file and line with debug info, else
// the function.
void LaunchRouting::warn(const Instruction &At, const Twine &Why) {
  std::string Where = ("in " + At.getFunction()->getName() + ": ").str();
  if (const DebugLoc &L = At.getDebugLoc())
    Where = (L->getFilename() + ":" + Twine(L->getLine()) + ": ").str();
  nano::warning(Ctx, Twine("nanoprobe: ") + Where + "NANO_LAUNCH stays serial: " + Why);
}

// The successors of B along normal control flow (an invoke's unwind edge is
// left out: landing pads are not part of the launch).
static SmallVector<BasicBlock *, 4> normalSuccessors(BasicBlock *B) {
  SmallVector<BasicBlock *, 4> Out;
  if (auto *II = dyn_cast<InvokeInst>(B->getTerminator()))
    Out.push_back(II->getNormalDest());
  else
    for (BasicBlock *S : successors(B))
      Out.push_back(S);
  return Out;
}

// The kernel call of a launch: the last call (or invoke) on the way from the
// route's true branch to where it joins the serial branch; the arguments may
// call functions before it. The join is the first block the serial branch
// also reaches without passing the route again (a launch in a loop reaches
// itself). Null, with Why, when the true branch is not a plain call.
CallBase *LaunchRouting::kernelCall(BranchInst *BI, std::string &Why) {
  BasicBlock *Launch = BI->getParent();
  SmallPtrSet<BasicBlock *, 32> Serial;
  std::vector<BasicBlock *> Work{BI->getSuccessor(1)};
  while (!Work.empty()) {
    BasicBlock *B = Work.back();
    Work.pop_back();
    if (B == Launch || !Serial.insert(B).second)
      continue;
    for (BasicBlock *S : normalSuccessors(B))
      Work.push_back(S);
  }
  SmallPtrSet<BasicBlock *, 8> Region;
  BasicBlock *Exit = nullptr;
  Work.push_back(BI->getSuccessor(0));
  while (!Work.empty()) {
    BasicBlock *B = Work.back();
    Work.pop_back();
    if (B == Launch || Serial.count(B) || !Region.insert(B).second)
      continue;
    for (BasicBlock *S : normalSuccessors(B)) {
      if (Serial.count(S)) {
        if (Exit && Exit != B) {
          Why = "the launched expression has several exits";
          return nullptr;
        }
        Exit = B;
      }
      Work.push_back(S);
    }
  }
  if (!Exit) {
    Why = "the launched expression does not return";
    return nullptr;
  }
  // Back from the exit along the path to the join (an invoked call ends its
  // block; its normal destination follows).
  for (BasicBlock *B = Exit; B && Region.count(B); B = B->getUniquePredecessor()) {
    for (auto It = B->rbegin(); It != B->rend(); ++It) {
      auto *CB = dyn_cast<CallBase>(&*It);
      if (!CB || isa<IntrinsicInst>(CB))
        continue;
      if (isa<CallInst>(CB) || isa<InvokeInst>(CB))
        return CB;
      Why = "the launched expression is not a kernel call";
      return nullptr;
    }
  }
  Why = "the launched expression is not a kernel call";
  return nullptr;
}

// The per-kernel thread function (see the file comment).
Function *LaunchRouting::threadFunction(CallBase *K, Function *Enter, StructType *Args) {
  Function *Kernel = K->getCalledFunction();
  std::string Name = ("nano.launch.thread." + Kernel->getName()).str();
  if (Function *F = M.getFunction(Name))
    return F;
  FunctionType *KT = Kernel->getFunctionType();
  SmallVector<Type *, 8> TwinParams(KT->param_begin(), KT->param_end());
  TwinParams.push_back(Ptr);
  auto *TwinTy = FunctionType::get(KT->getReturnType(), TwinParams, false);
  std::string TwinName = nano::twinName(Kernel->getName());
  Function *Twin = M.getFunction(TwinName);
  if (!Twin)
    Twin = Function::Create(TwinTy, GlobalValue::ExternalWeakLinkage, TwinName, &M);

  auto *FT = FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Ptr, Ptr}, false);
  Function *F = Function::Create(FT, GlobalValue::InternalLinkage, Name, &M);
  F->addFnAttr(Attribute::NoInline);
  Argument *A = F->getArg(0), *Desc = F->getArg(1), *Pos = F->getArg(2);
  A->setName("args");
  Desc->setName("desc");
  Pos->setName("pos");
  BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", F);
  BasicBlock *ToTwin = BasicBlock::Create(Ctx, "twin", F);
  BasicBlock *ToKernel = BasicBlock::Create(Ctx, "kernel", F);
  IRBuilder<> B(Entry);
  B.CreateCall(Enter->getFunctionType(), Enter, {Pos});
  SmallVector<Value *, 8> Vals;
  for (unsigned i = 0; i < Args->getNumElements(); i++)
    Vals.push_back(B.CreateLoad(Args->getElementType(i), B.CreateStructGEP(Args, A, i)));
  B.CreateCondBr(B.CreateIsNotNull(Desc), ToTwin, ToKernel);

  // The calls keep the launch's argument attributes (byval, zeroext, ...).
  AttributeList Attrs = K->getAttributes();
  B.SetInsertPoint(ToKernel);
  CallInst *C = B.CreateCall(KT, Kernel, Vals);
  C->setCallingConv(K->getCallingConv());
  C->setAttributes(Attrs);
  B.CreateRetVoid();

  B.SetInsertPoint(ToTwin);
  SmallVector<Value *, 8> TwinVals(Vals.begin(), Vals.end());
  TwinVals.push_back(Desc);
  SmallVector<AttributeSet, 8> ParamAttrs;
  for (unsigned i = 0; i < Vals.size(); i++)
    ParamAttrs.push_back(Attrs.getParamAttrs(i));
  ParamAttrs.push_back(AttributeSet());
  C = B.CreateCall(TwinTy, Twin, TwinVals);
  C->setCallingConv(K->getCallingConv());
  C->setAttributes(AttributeList::get(Ctx, Attrs.getFnAttrs(), Attrs.getRetAttrs(), ParamAttrs));
  B.CreateRetVoid();
  return F;
}

// The struct nano_cpu_kernel of the launched kernel (nano/kernel.h).
GlobalVariable *LaunchRouting::launchOf(CallBase *K, Function *Enter, StructType *Args) {
  Function *Kernel = K->getCalledFunction();
  if (GlobalVariable *GV = Launches.lookup(Kernel))
    return GV;
  Function *Thread = threadFunction(K, Enter, Args);
  Function *Twin = M.getFunction(nano::twinName(Kernel->getName()));
  auto *Ty = StructType::get(Ctx, {I32, I32, Ptr, Ptr, Ptr});
  Constant *Name = ConstantDataArray::getString(Ctx, Kernel->getName());
  auto *NameGV = new GlobalVariable(M, Name->getType(), true, GlobalValue::PrivateLinkage, Name,
                                    "nano.launch.name");
  NameGV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  Constant *Init = ConstantStruct::get(
      Ty, {ConstantInt::get(I32, NANO_CPU_LAUNCH_ABI),
           ConstantInt::get(I32, DL.getTypeAllocSize(Args).getFixedValue()), NameGV, Thread, Twin});
  auto *GV = new GlobalVariable(M, Ty, true, GlobalValue::PrivateLinkage, Init,
                                ("nano.launch." + Kernel->getName()).str());
  Launches[Kernel] = GV;
  return GV;
}

// Routes one launch; false (with a warning) when it stays serial.
bool LaunchRouting::route(CallInst *Route) {
  auto *Enter = dyn_cast<Function>(Route->getArgOperand(3)->stripPointerCasts());
  ICmpInst *Cmp = Route->hasOneUse() ? dyn_cast<ICmpInst>(*Route->user_begin()) : nullptr;
  BranchInst *BI = Cmp && Cmp->hasOneUse() ? dyn_cast<BranchInst>(*Cmp->user_begin()) : nullptr;
  if (!Enter || !Cmp || Cmp->getPredicate() != ICmpInst::ICMP_NE || !BI || !BI->isConditional()) {
    warn(*Route, "the launch does not have the form nano/kernel.h gives it");
    return false;
  }
  std::string Why;
  Function *Caller = Route->getFunction();
  CallBase *K = kernelCall(BI, Why);
  Function *Kernel = K ? K->getCalledFunction() : nullptr;
  if (K && !Kernel)
    Why = "the kernel is called through a pointer";
  else if (Kernel && (!Kernel->getReturnType()->isVoidTy() || Kernel->isVarArg()))
    Why = "the kernel does not return void or takes variable arguments";
  else if (Kernel && (K->hasStructRetAttr() || K->hasInAllocaArgument()))
    Why = "the kernel takes an sret or inalloca argument";
  if (!Kernel || !Why.empty()) {
    warn(K ? *K : *Route, Why);
    return false;
  }

  SmallVector<Type *, 8> Types;
  for (Value *V : K->args())
    Types.push_back(V->getType());
  StructType *Args = StructType::get(Ctx, Types);
  GlobalVariable *Launch = launchOf(K, Enter, Args);

  // An invoked kernel becomes a call: a kernel that throws cannot unwind
  // through the runtime's worker threads anyway (the program ends).
  if (auto *II = dyn_cast<InvokeInst>(K))
    K = changeToCall(II);
  IRBuilder<> B(&*Caller->getEntryBlock().getFirstInsertionPt());
  AllocaInst *Block = B.CreateAlloca(Args, nullptr, "nano.launch.args");
  B.SetInsertPoint(K);
  for (unsigned i = 0; i < K->arg_size(); i++)
    B.CreateStore(K->getArgOperand(i), B.CreateStructGEP(Args, Block, i));
  FunctionCallee Launcher = M.getOrInsertFunction(
      RuntimeLaunch, FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Ptr, Ptr, I32, Ptr}, false));
  if (auto *LF = dyn_cast<Function>(Launcher.getCallee()))
    LF->setLinkage(GlobalValue::ExternalWeakLinkage);
  CallInst *Call = B.CreateCall(Launcher, {Launch, Route->getArgOperand(0), Route->getArgOperand(1),
                                           Route->getArgOperand(2), Block});
  Call->setDebugLoc(K->getDebugLoc());
  K->eraseFromParent();

  // The route: "is the runtime loaded".
  B.SetInsertPoint(Route);
  Value *Loaded = B.CreateZExt(B.CreateIsNotNull(Launcher.getCallee()), Route->getType());
  Route->replaceAllUsesWith(Loaded);
  Route->eraseFromParent();
  return true;
}

bool LaunchRouting::run() {
  Function *RouteFn = M.getFunction(RouteName);
  if (!RouteFn)
    return false;
  if (Function *Existing = M.getFunction(RuntimeLaunch))
    if (Existing->getFunctionType() !=
        FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Ptr, Ptr, I32, Ptr}, false)) {
      Ctx.emitError(std::string("nanoprobe: ") + RuntimeLaunch + " is declared with another type");
      return false;
    }
  std::vector<CallInst *> Routes;
  for (User *U : RouteFn->users())
    if (auto *CI = dyn_cast<CallInst>(U))
      if (CI->getCalledFunction() == RouteFn && CI->arg_size() == 4)
        Routes.push_back(CI);
  bool Changed = false;
  for (CallInst *R : Routes) {
    if (route(R)) {
      ++NumLaunchesRouted;
      Changed = true;
    } else {
      ++NumLaunchesSerial;
    }
  }
  return Changed;
}

PreservedAnalyses LaunchRoutingPass::run(Module &M, ModuleAnalysisManager &) {
  if (!nano::compat::hostModule(M))
    return PreservedAnalyses::all();
  LaunchRouting R(M);
  return R.run() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

void nano::registerLaunchRouting(PassBuilder &PB) {
  compat::registerModulePass<LaunchRoutingPass>(PB, "nano-launch",
                                                compat::PassPoint::PipelineStart);
}
