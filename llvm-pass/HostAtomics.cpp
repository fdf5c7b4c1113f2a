//===- HostAtomics.cpp - a hook before every host atomic operation ---------===//
//
// The host half of libNanoPass.so. Every atomic operation of a host module
// (atomicrmw, cmpxchg, atomic load and store, fence, and calls to the generic
// and sized __atomic_* library functions) becomes a *site*: one entry of a
// module-private, writable array of `struct nano_site` (runtime/include/
// nano/atomics.h, ABI 1) holding its kind, memory order, flags, size and
// source position. Immediately before the operation the pass inserts
//
//     if (&__nano_atomic != 0) __nano_atomic(&sites[i]);
//
// and one constructor of priority 101 per module calls
// __nano_register_module(&module) when that symbol is present. Both hooks are
// extern_weak, so an instrumented binary runs unchanged without the runtime,
// and LD_PRELOAD of libnano_tracker.so turns counting on (through the GOT in
// position-independent code; see README.md for -no-pie and -static).
//
// The operation itself is never touched: the hook only observes. The check is
// one GOT load, a compare and a branch weighted towards "no runtime", so an
// untracked binary pays almost nothing and the call stays out of line.
//
// Loop counter promotion. On x86 a locked instruction serialises every memory
// update around it, so a call per atomic costs about 1.3x a relaxed fetch_add
// however little the hook does. In optimised code (functions not optnone), a
// site in a loop whose calls all return normally (every call is a site, or a
// `call` that is nounwind and willreturn; no invoke, no callbr) is counted in a
// per-site register instead: `n += (&__nano_atomic != 0)` before the
// operation, and `if (n) nano.atomic_flush(&sites[i], n), n = 0` at the start
// of every exit block of the innermost loop that contains it (exit blocks are
// made dedicated first; a loop where that is impossible is not promoted), and
// inside the loop when n reaches 2^16, so a thread that stays in a loop still
// reports. Control can only leave such a loop through its exit edges, so the
// counts stay exact. nano.atomic_flush, one internal function per module,
// calls the extern_weak __nano_atomic_n(site, n), or __nano_atomic n times for
// a runtime without it. The counter is an alloca promoted to SSA registers
// (PromoteMemToReg). -nano-atomics-promote=0 / NANO_ATOMICS_PROMOTE=0 keeps a
// call per event (e.g. for libnano_print.so's exact event order).
//
// Inline counting. Every other site of an executable's optimised code (not
// position-independent, or PIE; not optnone) counts its event in the program
// itself, in the thread's counters the runtime points the executable's
// thread-local `__nano_atomic_ctr` at (nano/atomics.h, "Inline counting"):
// behind the same guard, a relaxed load of the site's id, a bound check and
// an increment, and a call (nano.atomic_slow: __nano_atomic_bind, else
// __nano_atomic) only when the site or the thread is new to the runtime. A
// call per event costs 1.2-1.35x a relaxed fetch_add on some days of the
// development VM, where the same instructions inline cost 1.00-1.10x
// (bench/atomics). Shared libraries keep the call (their TLS would cost a
// call of its own). -nano-atomics-inline=0 / NANO_ATOMICS_INLINE=0 keeps the
// call everywhere.
//
// The pass runs at the OptimizerLast extension point (after inlining, at every
// level from -O0 to -O3 and in the compile step of -flto) and as
// `opt -passes=nano-atomics`. It leaves alone: modules already instrumented
// (module flag "nano.atomics"), device modules (amdgcn, nvptx, spirv), the
// runtime and prelude-instrumented modules (they define or already call the
// hooks), modules and functions marked no-instrument, kernel twins ("nano.twin")
// and the runtime's own functions (nano_*, __nano_*). A module it cannot handle
// gets a warning and is left unchanged.
//
//===----------------------------------------------------------------------===//
#include "Compat.h"
#include "Passes.h"
#include "Settings.h"
#include "SourceFile.h"

#include "nano/atomics.h"
#include "nano/path.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/DomTreeUpdater.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/PromoteMemToReg.h"

#include <bitset>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
namespace compat = nano::compat;

#define DEBUG_TYPE "nano-atomics"

// Counted in release builds of LLVM too (Debian's have no statistics):
// `clang -save-stats` or `-Xclang -stats-file=F` writes them (README).
ALWAYS_ENABLED_STATISTIC(NumSites, "host atomic sites instrumented");
ALWAYS_ENABLED_STATISTIC(NumInlinedSites, "sites reported at a user's line they were inlined into");
ALWAYS_ENABLED_STATISTIC(NumLibrarySites, "sites whose every frame is library code (flagged)");
ALWAYS_ENABLED_STATISTIC(NumPromotedLoops, "loops whose sites are counted in a register");
ALWAYS_ENABLED_STATISTIC(NumPromotedSites, "sites counted in a register (promoted loops)");
ALWAYS_ENABLED_STATISTIC(NumHookCalls, "sites with a hook call before the operation");
ALWAYS_ENABLED_STATISTIC(NumInlineCounted, "sites counted in the program (inline counting)");

// The emitted struct types below mirror atomics.h field by field; on an LP64
// host, check that the header agrees.
#if defined(__LP64__)
static_assert(sizeof(struct nano_site) == 48, "nano_site is 48 bytes on LP64");
static_assert(offsetof(struct nano_site, size) == 8 && offsetof(struct nano_site, function) == 24 &&
                  offsetof(struct nano_site, module) == 40,
              "nano_site layout changed: update the pass");
static_assert(sizeof(struct nano_site_module) == 48 &&
                  offsetof(struct nano_site_module, origins) == 40,
              "nano_site_module is 48 bytes on LP64: update the pass");
static_assert(sizeof(struct nano_site_origin) == 24, "nano_site_origin is 24 bytes on LP64");
#endif

static cl::opt<std::string>
    ClKinds("nano-atomics-kinds",
            cl::desc("nanoprobe: comma-separated kinds of atomic operation to instrument "
                     "(all, none, rmw, fences, or kind names such as fetch_add); "
                     "overrides NANO_ATOMICS_KINDS"),
            cl::value_desc("kinds"));
static cl::opt<std::string>
    ClFunctions("nano-atomics-functions",
                cl::desc("nanoprobe: instrument only functions whose (mangled) name matches this "
                         "regex; overrides NANO_ATOMICS_FUNCTIONS"),
                cl::value_desc("regex"));
static cl::opt<std::string> ClExcludeFunctions(
    "nano-atomics-exclude-functions",
    cl::desc("nanoprobe: never instrument functions whose (mangled) name matches this regex; "
             "overrides NANO_ATOMICS_EXCLUDE_FUNCTIONS"),
    cl::value_desc("regex"));
static cl::opt<std::string>
    ClFiles("nano-atomics-files",
            cl::desc("nanoprobe: instrument only sites whose source file matches this regex; "
                     "overrides NANO_ATOMICS_FILES"),
            cl::value_desc("regex"));
static cl::opt<std::string>
    ClExcludeFiles("nano-atomics-exclude-files",
                   cl::desc("nanoprobe: never instrument sites whose source file matches this "
                            "regex; overrides NANO_ATOMICS_EXCLUDE_FILES"),
                   cl::value_desc("regex"));

static cl::opt<std::string> ClLibraryFiles(
    "nano-atomics-library-files",
    cl::desc("nanoprobe: source files that are library code: an atomic inlined from one is "
             "reported at its first caller outside them; overrides NANO_ATOMICS_LIBRARY_FILES"),
    cl::value_desc("regex"));

// Where libraries' headers live on Linux (normalised paths): libc and
// libstdc++ (/usr/include, /usr/lib/gcc/...), clang's own headers
// (/usr/lib/llvm-N/lib/clang), and the CUDA and ROCm toolkits.
static cl::opt<std::string>
    ClPromote("nano-atomics-promote",
              cl::desc("nanoprobe: 1 (default) counts the atomic sites of loops in a register "
                       "and reports them at the loop's exits; 0 calls the hook before every "
                       "operation; overrides NANO_ATOMICS_PROMOTE"),
              cl::value_desc("0|1"));

static cl::opt<std::string>
    ClInline("nano-atomics-inline",
             cl::desc("nanoprobe: 1 (default) counts the events of an executable's optimised "
                      "code in the program itself, calling the runtime only for a new site or "
                      "thread; 0 calls the hook before every operation that is not promoted; "
                      "overrides NANO_ATOMICS_INLINE"),
             cl::value_desc("0|1"));

// A promoted site reports its in-register count when it reaches this many
// events, so a thread that stays in a loop still shows up in the counts.
static const uint64_t HostPromoteFlush = uint64_t(1) << 16;

namespace {

// Short kind names, indexed by enum nano_kind: the GCC builtin name without
// its "__atomic_" prefix.
const char *const HostKindNames[] = {
#define NANO_KIND(id, name, value) #name,
#include "nano/atomic_kinds.def"
};
// The names are indexed by value: the table must list the kinds in order.
constexpr unsigned HostKindValues[] = {
#define NANO_KIND(id, name, value) value,
#include "nano/atomic_kinds.def"
};
constexpr bool hostKindsInOrder() {
  for (unsigned K = 0; K < NANO_KIND_COUNT; ++K)
    if (HostKindValues[K] != K)
      return false;
  return sizeof(HostKindValues) / sizeof(HostKindValues[0]) == NANO_KIND_COUNT;
}
static_assert(hostKindsInOrder(), "nano/atomic_kinds.def must list kinds by value");

using HostKindSet = std::bitset<NANO_KIND_COUNT>;

// The settings of one compiler process: kinds and regex filters.
struct HostConfig {
  std::string Error; // a malformed setting, named: the pass stops with it
  HostKindSet Kinds;
  bool Promote = true;
  bool Inline = true;
  std::unique_ptr<Regex> Functions, ExcludeFunctions, Files, ExcludeFiles;
  std::unique_ptr<Regex> LibraryFiles; // never null once read
};

// One operation to instrument, with what its site records.
struct HostSite {
  Instruction *I = nullptr;
  uint16_t Kind = 0;
  uint8_t Order = NANO_ORDER_RELAXED;
  uint8_t Flags = 0;
  uint32_t Size = 0;
  uint32_t Line = 0;
  uint32_t Column = 0;
  std::string File;     // the file of the reported frame
  std::string Function; // the function of the reported frame ("": the IR function's name)
  // The operation's own debug location when the site is reported at a caller
  // it was inlined into (hostAttribute), else null.
  const DILocation *Origin = nullptr;
};

struct HostAtomicsPass : PassInfoMixin<HostAtomicsPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM);
  // Instrumentation must also run on optnone (-O0) functions.
  static bool isRequired() { return true; }
};

} // namespace

// The host settings as a table of names for NANO_ATOMICS_KINDS: every kind,
// and the groups all, none, rmw (exchange and every fetch_*) and fences.
static std::vector<nano::NamedBits> hostKindTable() {
  uint64_t RMW = uint64_t(1) << NANO_KIND_EXCHANGE;
  for (unsigned K = NANO_KIND_FETCH_ADD; K <= NANO_KIND_FETCH_FMINIMUM; ++K)
    RMW |= uint64_t(1) << K;
  std::vector<nano::NamedBits> T = {
      {"all", (uint64_t(1) << NANO_KIND_COUNT) - 1},
      {"none", 0},
      {"rmw", RMW},
      {"fences", uint64_t(1) << NANO_KIND_THREAD_FENCE | uint64_t(1) << NANO_KIND_SIGNAL_FENCE}};
  for (unsigned K = 0; K < NANO_KIND_COUNT; ++K)
    T.push_back({HostKindNames[K], uint64_t(1) << K});
  return T;
}

// Reads the host settings; on a malformed one, C.Error names it.
static HostConfig hostReadConfig() {
  HostConfig C;
  C.Kinds.set();
  std::string &Err = C.Error;
  nano::Setting Kinds = nano::readSetting(ClKinds, "NANO_ATOMICS_KINDS");
  if (Kinds.isSet()) {
    // kind names are taken with or without GCC's "__atomic_" prefix
    uint64_t Bits;
    if (!nano::parseBitList(Kinds, hostKindTable(), Bits, Err, "__atomic_"))
      return C;
    C.Kinds = HostKindSet(Bits);
  }
  struct {
    const cl::opt<std::string> &Opt;
    const char *Env;
    std::unique_ptr<Regex> &Out;
  } Regexes[] = {{ClFunctions, "NANO_ATOMICS_FUNCTIONS", C.Functions},
                 {ClExcludeFunctions, "NANO_ATOMICS_EXCLUDE_FUNCTIONS", C.ExcludeFunctions},
                 {ClFiles, "NANO_ATOMICS_FILES", C.Files},
                 {ClExcludeFiles, "NANO_ATOMICS_EXCLUDE_FILES", C.ExcludeFiles}};
  for (auto &R : Regexes) {
    nano::Setting S = nano::readSetting(R.Opt, R.Env);
    if (S.isSet() && !nano::parseRegex(S, false, R.Out, Err))
      return C;
  }
  nano::Setting Library = nano::readSetting(ClLibraryFiles, "NANO_ATOMICS_LIBRARY_FILES");
  if (!Library.isSet())
    Library = {NANO_LIBRARY_FILES_DEFAULT, "the default library files"};
  if (!nano::parseRegex(Library, false, C.LibraryFiles, Err))
    return C;
  nano::Setting Promote = nano::readSetting(ClPromote, "NANO_ATOMICS_PROMOTE");
  if (Promote.isSet() && !nano::parseSwitch(Promote, C.Promote, Err))
    return C;
  nano::Setting Inline = nano::readSetting(ClInline, "NANO_ATOMICS_INLINE");
  if (Inline.isSet())
    nano::parseSwitch(Inline, C.Inline, Err);
  return C;
}

// The process-wide settings, read and checked on first use.
static const HostConfig &hostConfig() {
  static const HostConfig Config = hostReadConfig();
  return Config;
}

// Reports that M is left unchanged, as a compiler warning.
static void hostDiagnose(Module &M, const Twine &Why) {
  std::string Msg = ("nanoprobe: module '" + M.getModuleIdentifier() +
                     "' left without atomic instrumentation: " + Why)
                        .str();
  nano::warning(M.getContext(), Msg);
}

// Maps an LLVM ordering to enum nano_order (unordered counts as relaxed).
static uint8_t hostOrder(AtomicOrdering O) {
  switch (O) {
  case AtomicOrdering::NotAtomic:
  case AtomicOrdering::Unordered:
  case AtomicOrdering::Monotonic:
    return NANO_ORDER_RELAXED;
  case AtomicOrdering::Acquire:
    return NANO_ORDER_ACQUIRE;
  case AtomicOrdering::Release:
    return NANO_ORDER_RELEASE;
  case AtomicOrdering::AcquireRelease:
    return NANO_ORDER_ACQ_REL;
  case AtomicOrdering::SequentiallyConsistent:
    return NANO_ORDER_SEQ_CST;
  }
  return NANO_ORDER_UNKNOWN;
}

// The kind of an atomicrmw operation, or NANO_KIND_COUNT for one this
// version of the pass does not know.
static unsigned hostRMWKind(AtomicRMWInst::BinOp Op) {
  switch (Op) {
  case AtomicRMWInst::Xchg:
    return NANO_KIND_EXCHANGE;
  case AtomicRMWInst::Add:
    return NANO_KIND_FETCH_ADD;
  case AtomicRMWInst::Sub:
    return NANO_KIND_FETCH_SUB;
  case AtomicRMWInst::And:
    return NANO_KIND_FETCH_AND;
  case AtomicRMWInst::Nand:
    return NANO_KIND_FETCH_NAND;
  case AtomicRMWInst::Or:
    return NANO_KIND_FETCH_OR;
  case AtomicRMWInst::Xor:
    return NANO_KIND_FETCH_XOR;
  case AtomicRMWInst::Max:
    return NANO_KIND_FETCH_MAX;
  case AtomicRMWInst::Min:
    return NANO_KIND_FETCH_MIN;
  case AtomicRMWInst::UMax:
    return NANO_KIND_FETCH_UMAX;
  case AtomicRMWInst::UMin:
    return NANO_KIND_FETCH_UMIN;
  case AtomicRMWInst::FAdd:
    return NANO_KIND_FETCH_FADD;
  case AtomicRMWInst::FSub:
    return NANO_KIND_FETCH_FSUB;
  case AtomicRMWInst::FMax:
    return NANO_KIND_FETCH_FMAX;
  case AtomicRMWInst::FMin:
    return NANO_KIND_FETCH_FMIN;
#if NANO_HAS_RMW_UINC_UDEC_WRAP
  case AtomicRMWInst::UIncWrap:
    return NANO_KIND_FETCH_UINC_WRAP;
  case AtomicRMWInst::UDecWrap:
    return NANO_KIND_FETCH_UDEC_WRAP;
#endif
#if NANO_HAS_RMW_USUB_COND_SAT
  case AtomicRMWInst::USubCond:
    return NANO_KIND_FETCH_USUB_COND;
  case AtomicRMWInst::USubSat:
    return NANO_KIND_FETCH_USUB_SAT;
#endif
#if NANO_HAS_RMW_FMAXIMUM_FMINIMUM
  case AtomicRMWInst::FMaximum:
    return NANO_KIND_FETCH_FMAXIMUM;
  case AtomicRMWInst::FMinimum:
    return NANO_KIND_FETCH_FMINIMUM;
#endif
  default:
    return NANO_KIND_COUNT;
  }
}

// The order encoded by a library call's order argument: the constant's C ABI
// value (__ATOMIC_RELAXED .. __ATOMIC_SEQ_CST), else NANO_ORDER_UNKNOWN.
static uint8_t hostCallOrder(const Value *V) {
  const auto *C = dyn_cast<ConstantInt>(V);
  if (!C || C->getValue().getActiveBits() > 8 || C->getZExtValue() > NANO_ORDER_SEQ_CST)
    return NANO_ORDER_UNKNOWN;
  return static_cast<uint8_t>(C->getZExtValue());
}

// Recognises a call to a libatomic function (__atomic_load, __atomic_fetch_add_4,
// ...) and fills S. Returns false for anything else, including a function of
// such a name whose argument count does not match libatomic's.
static bool hostClassifyCall(CallBase &CB, HostSite &S) {
  const Function *Callee = CB.getCalledFunction();
  if (!Callee || Callee->isIntrinsic())
    return false;
  StringRef Name = Callee->getName();
  if (!compat::startsWith(Name, "__atomic_"))
    return false;
  Name = Name.drop_front(9);
  unsigned Sized = 0;
  for (unsigned N : {1u, 2u, 4u, 8u, 16u}) {
    std::string Suffix = "_" + std::to_string(N);
    if (Name.size() > Suffix.size() && compat::endsWith(Name, Suffix)) {
      Sized = N;
      Name = Name.drop_back(Suffix.size());
      break;
    }
  }
  // Argument counts: generic (size first) and sized forms.
  unsigned Kind, Generic = 0, SizedArgs;
  if (Name == "load") {
    Kind = NANO_KIND_LOAD, Generic = 4, SizedArgs = 2;
  } else if (Name == "store") {
    Kind = NANO_KIND_STORE, Generic = 4, SizedArgs = 3;
  } else if (Name == "exchange") {
    Kind = NANO_KIND_EXCHANGE, Generic = 5, SizedArgs = 3;
  } else if (Name == "compare_exchange") {
    Kind = NANO_KIND_COMPARE_EXCHANGE, Generic = 6, SizedArgs = 5;
  } else if (Name == "test_and_set") {
    Kind = NANO_KIND_TEST_AND_SET, SizedArgs = 2;
  } else {
    static const char *const Ops[] = {"add", "sub", "and", "nand", "or", "xor"};
    static const unsigned OpKinds[] = {NANO_KIND_FETCH_ADD, NANO_KIND_FETCH_SUB,
                                       NANO_KIND_FETCH_AND, NANO_KIND_FETCH_NAND,
                                       NANO_KIND_FETCH_OR,  NANO_KIND_FETCH_XOR};
    Kind = NANO_KIND_COUNT;
    for (unsigned I = 0; I < 6; ++I)
      if (Name == std::string("fetch_") + Ops[I] || Name == std::string(Ops[I]) + "_fetch")
        Kind = OpKinds[I];
    if (Kind == NANO_KIND_COUNT)
      return false;
    SizedArgs = 3;
  }
  unsigned NArgs = CB.arg_size();
  if (Sized ? NArgs != SizedArgs : (Generic == 0 || NArgs != Generic))
    return false;
  S.Kind = static_cast<uint16_t>(Kind);
  S.Flags = NANO_SITE_LIBCALL;
  if (Sized) {
    S.Size = Sized;
  } else if (const auto *C = dyn_cast<ConstantInt>(CB.getArgOperand(0))) {
    S.Size = C->getValue().getActiveBits() <= 32 ? static_cast<uint32_t>(C->getZExtValue()) : 0;
  }
  if (Kind == NANO_KIND_COMPARE_EXCHANGE) {
    S.Order = hostCallOrder(CB.getArgOperand(NArgs - 2));
    S.Flags |= hostCallOrder(CB.getArgOperand(NArgs - 1)) << 4;
  } else {
    S.Order = hostCallOrder(CB.getArgOperand(NArgs - 1));
  }
  return true;
}

// Bytes accessed through a value of type Ty.
static uint32_t hostSize(const DataLayout &DL, Type *Ty) {
  return static_cast<uint32_t>(DL.getTypeStoreSize(Ty).getFixedValue());
}

// Fills S for an atomic operation. Returns false when I is not one.
static bool hostClassify(Instruction &I, const DataLayout &DL, HostSite &S) {
  if (auto *LI = dyn_cast<LoadInst>(&I)) {
    if (!LI->isAtomic())
      return false;
    S.Kind = NANO_KIND_LOAD, S.Order = hostOrder(LI->getOrdering());
    S.Size = hostSize(DL, LI->getType());
    S.Flags = LI->isVolatile() ? NANO_SITE_VOLATILE : 0;
  } else if (auto *SI = dyn_cast<StoreInst>(&I)) {
    if (!SI->isAtomic())
      return false;
    S.Kind = NANO_KIND_STORE, S.Order = hostOrder(SI->getOrdering());
    S.Size = hostSize(DL, SI->getValueOperand()->getType());
    S.Flags = SI->isVolatile() ? NANO_SITE_VOLATILE : 0;
  } else if (auto *RMW = dyn_cast<AtomicRMWInst>(&I)) {
    unsigned Kind = hostRMWKind(RMW->getOperation());
    if (Kind == NANO_KIND_COUNT)
      return false;
    S.Kind = static_cast<uint16_t>(Kind), S.Order = hostOrder(RMW->getOrdering());
    S.Size = hostSize(DL, RMW->getValOperand()->getType());
    S.Flags = RMW->isVolatile() ? NANO_SITE_VOLATILE : 0;
  } else if (auto *CX = dyn_cast<AtomicCmpXchgInst>(&I)) {
    S.Kind = NANO_KIND_COMPARE_EXCHANGE, S.Order = hostOrder(CX->getSuccessOrdering());
    S.Size = hostSize(DL, CX->getNewValOperand()->getType());
    S.Flags = static_cast<uint8_t>(hostOrder(CX->getFailureOrdering()) << 4);
    if (CX->isWeak())
      S.Flags |= NANO_SITE_WEAK;
    if (CX->isVolatile())
      S.Flags |= NANO_SITE_VOLATILE;
  } else if (auto *FI = dyn_cast<FenceInst>(&I)) {
    S.Kind = FI->getSyncScopeID() == SyncScope::SingleThread ? NANO_KIND_SIGNAL_FENCE
                                                             : NANO_KIND_THREAD_FENCE;
    S.Order = hostOrder(FI->getOrdering());
  } else if (auto *CB = dyn_cast<CallBase>(&I)) {
    return hostClassifyCall(*CB, S);
  } else {
    return false;
  }
  return true;
}

// The functions listed in llvm.global.annotations with the given annotation,
// and whether a global variable carries it (which marks the whole module).
static void hostAnnotated(Module &M, StringRef Annotation, SmallPtrSetImpl<Function *> &Fns,
                          bool &ModuleMarked) {
  GlobalVariable *GA = M.getNamedGlobal("llvm.global.annotations");
  if (!GA || !GA->hasInitializer())
    return;
  auto *Arr = dyn_cast<ConstantArray>(GA->getInitializer());
  if (!Arr)
    return;
  for (Value *Op : Arr->operands()) {
    auto *Entry = dyn_cast<ConstantStruct>(Op);
    if (!Entry || Entry->getNumOperands() < 2)
      continue;
    if (compat::constantString(Entry->getOperand(1)) != Annotation)
      continue;
    Value *Target = Entry->getOperand(0)->stripPointerCasts();
    if (auto *F = dyn_cast<Function>(Target))
      Fns.insert(F);
    else if (isa<GlobalVariable>(Target))
      ModuleMarked = true;
  }
}

// True when the function must not be instrumented, whatever the filters say.
static bool hostSkipFunction(const Function &F, const SmallPtrSetImpl<Function *> &NoInstrument) {
  StringRef Name = F.getName();
  return F.isDeclaration() || F.hasAvailableExternallyLinkage() ||
         F.hasFnAttribute(Attribute::Naked) ||
         F.hasFnAttribute(Attribute::DisableSanitizerInstrumentation) ||
         F.hasFnAttribute("nano.twin") || compat::startsWith(Name, "__nano_") ||
         compat::startsWith(Name, "nano_") || compat::startsWith(Name, "nano.") ||
         NoInstrument.count(const_cast<Function *>(&F));
}

// Why the module as a whole is left alone, or "" to instrument it. Modules
// skipped for a reason the user chose stay silent; Diagnose is set when the
// reason is a limitation the user should hear about.
static std::string hostSkipModule(Module &M, bool &Diagnose) {
  Diagnose = false;
  if (M.getModuleFlag("nano.atomics"))
    return "already instrumented";
  Triple T = compat::targetTriple(M);
  if (T.isAMDGPU() || T.isNVPTX() || T.isSPIRV())
    return "device module";
  for (const char *Hook :
       {"__nano_atomic", "__nano_atomic_n", "__nano_atomic_bind", "__nano_register_module"}) {
    if (GlobalValue *GV = M.getNamedValue(Hook)) {
      if (!GV->isDeclaration())
        return "defines the runtime hooks";
      if (!GV->use_empty())
        return "already calls the hooks (prelude)";
    }
  }
  Diagnose = true;
  if (!T.isOSBinFormatELF())
    return "the hooks need ELF weak symbols, the target is " + T.str();
  if (compat::typedPointers(M.getContext()))
    return "typed pointers are not supported";
  return "";
}

// A declaration of a weak hook of type Ty, or null when the name is taken by
// something else.
static Function *hostHook(Module &M, StringRef Name, FunctionType *Ty) {
  GlobalValue *GV = M.getNamedValue(Name);
  if (!GV) {
    Function *F = Function::Create(Ty, GlobalValue::ExternalWeakLinkage, Name, M);
    F->addFnAttr(Attribute::NoUnwind);
    // Call through the GOT entry the null test already loaded, not the PLT.
    F->addFnAttr(Attribute::NonLazyBind);
    return F;
  }
  auto *F = dyn_cast<Function>(GV);
  if (!F || !F->isDeclaration() || F->getFunctionType() != Ty)
    return nullptr;
  // Preemptible, so the dynamic linker can bind it to a preloaded runtime.
  F->setLinkage(GlobalValue::ExternalWeakLinkage);
  F->setVisibility(GlobalValue::DefaultVisibility);
  F->setDSOLocal(false);
  return F;
}

// Emits `if (&Hook != null) { ... }` before Before, with Loc on every new
// instruction, the branch weighted towards the runtime's presence when
// Present is set, else towards its absence. Returns the terminator of the
// block that runs when the hook is there (the caller inserts before it).
static Instruction *hostGuard(Function *Hook, Instruction *Before, const DebugLoc &Loc,
                              bool Present) {
  MDBuilder MDB(Hook->getContext());
  auto *Null = ConstantPointerNull::get(cast<PointerType>(Hook->getType()));
  auto *Cond = new ICmpInst(ICmpInst::ICMP_NE, Hook, Null, "nano.hooked");
  IRBuilder<> IRB(Before);
  IRB.Insert(Cond);
  Cond->setDebugLoc(Loc);
  MDNode *Weights =
      Present ? MDB.createBranchWeights(1 << 20, 1) : MDB.createBranchWeights(1, 1 << 20);
  Instruction *Then = SplitBlockAndInsertIfThen(Cond, Before, false, Weights);
  Cond->getParent()->getTerminator()->setDebugLoc(Loc);
  Then->setDebugLoc(Loc);
  return Then;
}

// Emits `if (&Hook != null) Hook(Arg)` before Before, with Loc on every new
// instruction. The branch is weighted towards "no runtime".
static void hostGuardedCall(Function *Hook, Constant *Arg, Instruction *Before,
                            const DebugLoc &Loc) {
  IRBuilder<> TB(hostGuard(Hook, Before, Loc, false));
  CallInst *Call = TB.CreateCall(Hook->getFunctionType(), Hook, {Arg});
  Call->setDoesNotThrow();
  Call->setDebugLoc(Loc);
}

// The weak hooks of one module and its flush function (the last two only when
// a site is promoted), and what inline counting uses (when it is on).
struct HostHooks {
  Function *Atomic = nullptr;    // __nano_atomic
  Function *AtomicN = nullptr;   // __nano_atomic_n
  Function *Flush = nullptr;     // nano.atomic_flush
  GlobalVariable *Ctr = nullptr; // __nano_atomic_ctr: null where counting is not inline
  StructType *CtrTy = nullptr;   // struct nano_atomic_ctr
  Function *Slow = nullptr;      // nano.atomic_slow
};

// The address of thread-local GV in this thread.
static Value *hostThreadLocal(IRBuilder<> &B, GlobalVariable *GV) {
#if LLVM_VERSION_MAJOR >= 16
  return B.CreateThreadLocalAddress(GV);
#else
  (void)B;
  return GV;
#endif
}

// The executable's counter of inline counting (nano/atomics.h), one per
// linked executable (linkonce_odr in a comdat, hidden, local-exec), and
// nano.atomic_slow(site), the call of a site or thread new to the runtime:
// __nano_atomic_bind(site, &ctr) where the runtime has it, else
// __nano_atomic(site). Leaves H without them (the call per event stays)
// where the module is position-independent code that is not PIE, or the
// counter's name is taken.
static void hostInlineSetup(Module &M, HostHooks &H, FunctionType *BindTy) {
  if (M.getPICLevel() != PICLevel::NotPIC && M.getPIELevel() == PIELevel::Default)
    return;
  LLVMContext &Ctx = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  Function *Bind = hostHook(M, "__nano_atomic_bind", BindTy);
  if (!Bind || M.getNamedValue("__nano_atomic_ctr"))
    return;
  H.CtrTy = StructType::get(Ptr, Type::getInt32Ty(Ctx));
  H.Ctr = new GlobalVariable(M, H.CtrTy, false, GlobalValue::LinkOnceODRLinkage,
                             Constant::getNullValue(H.CtrTy), "__nano_atomic_ctr", nullptr,
                             GlobalValue::LocalExecTLSModel);
  H.Ctr->setVisibility(GlobalValue::HiddenVisibility);
  H.Ctr->setComdat(M.getOrInsertComdat("__nano_atomic_ctr"));
  H.Ctr->setAlignment(M.getDataLayout().getABITypeAlign(H.CtrTy));

  H.Slow = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), {Ptr}, false),
                            GlobalValue::InternalLinkage, "nano.atomic_slow", M);
  H.Slow->addFnAttr(Attribute::NoUnwind);
  H.Slow->addFnAttr(Attribute::NoInline);
  H.Slow->addFnAttr(Attribute::Cold);
  BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", H.Slow);
  BasicBlock *WithBind = BasicBlock::Create(Ctx, "bind", H.Slow);
  BasicBlock *Plain = BasicBlock::Create(Ctx, "plain", H.Slow);
  IRBuilder<> B(Entry);
  Value *HasBind = B.Insert(new ICmpInst(ICmpInst::ICMP_NE, Bind, ConstantPointerNull::get(Ptr)),
                            "nano.has_bind");
  B.CreateCondBr(HasBind, WithBind, Plain);
  B.SetInsertPoint(WithBind);
  B.CreateCall(BindTy, Bind, {H.Slow->getArg(0), hostThreadLocal(B, H.Ctr)})->setDoesNotThrow();
  B.CreateRetVoid();
  B.SetInsertPoint(Plain);
  B.CreateCall(H.Atomic->getFunctionType(), H.Atomic, {H.Slow->getArg(0)})->setDoesNotThrow();
  B.CreateRetVoid();
}

// Emits, before Before, with Loc, the event of Site counted in the program
// (nano/atomics.h): `if (&__nano_atomic != null) { i = site->id - 1; if (i <
// ctr.cap) ctr.counts[i]++; else nano.atomic_slow(site); }`, both branches
// weighted towards the increment: laid out straight, the counted event took
// 1.03-1.11x a bare fetch_add against 1.08-1.35x behind the call guard's
// weights (towards "no runtime"), and the untracked binary's jump over it
// costs nothing measurable (0.96-1.01x, bench/atomics).
static void hostInlineCount(const HostHooks &H, Constant *Site, Instruction *Before,
                            const DebugLoc &Loc) {
  LLVMContext &Ctx = Before->getContext();
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  MDBuilder MDB(Ctx);
  Instruction *Then = hostGuard(H.Atomic, Before, Loc, true);
  IRBuilder<> B(Then);
  B.SetCurrentDebugLocation(Loc);
  LoadInst *Id = B.CreateAlignedLoad(I32, Site, Align(4), "nano.id");
  Id->setAtomic(AtomicOrdering::Monotonic);
  Value *Idx = B.CreateAdd(Id, ConstantInt::get(I32, -1, true), "nano.idx");
  Value *Tls = hostThreadLocal(B, H.Ctr);
  Value *Cap = B.CreateLoad(I32, B.CreateStructGEP(H.CtrTy, Tls, 1), "nano.cap");
  Value *Known = B.CreateICmpULT(Idx, Cap, "nano.known");
  Instruction *Fast = nullptr, *Slow = nullptr;
  SplitBlockAndInsertIfThenElse(Known, Then, &Fast, &Slow, MDB.createBranchWeights(1 << 20, 1));
  cast<Instruction>(Known)->getParent()->getTerminator()->setDebugLoc(Loc);
  Fast->setDebugLoc(Loc);
  Slow->setDebugLoc(Loc);
  B.SetInsertPoint(Fast);
  Value *Counts = B.CreateLoad(Ptr, B.CreateStructGEP(H.CtrTy, Tls, 0), "nano.counts");
  Value *At = B.CreateInBoundsGEP(I64, Counts, B.CreateZExt(Idx, I64), "nano.at");
  LoadInst *N = B.CreateAlignedLoad(I64, At, Align(8), "nano.n");
  N->setAtomic(AtomicOrdering::Monotonic);
  StoreInst *St =
      B.CreateAlignedStore(B.CreateAdd(N, ConstantInt::get(I64, 1), "nano.n1"), At, Align(8));
  St->setAtomic(AtomicOrdering::Monotonic);
  B.SetInsertPoint(Slow);
  B.CreateCall(H.Slow->getFunctionType(), H.Slow, {Site})->setDoesNotThrow();
}

// Emits the internal nano.atomic_flush(site, n), n > 0: reports n events of
// site through __nano_atomic_n when the runtime defines it, else through n
// calls of __nano_atomic (a runtime that predates __nano_atomic_n). Callers
// only have n > 0 when __nano_atomic is present.
static Function *hostFlushFunction(Module &M, Function *Atomic, Function *AtomicN) {
  LLVMContext &Ctx = M.getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  Function *F = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), {Ptr, I64}, false),
                                 GlobalValue::InternalLinkage, "nano.atomic_flush", M);
  F->addFnAttr(Attribute::NoUnwind);
  F->addFnAttr(Attribute::NoInline);
  Argument *Site = F->getArg(0), *N = F->getArg(1);
  BasicBlock *Entry = BasicBlock::Create(Ctx, "entry", F);
  BasicBlock *Bulk = BasicBlock::Create(Ctx, "bulk", F);
  BasicBlock *Each = BasicBlock::Create(Ctx, "each", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, "done", F);
  IRBuilder<> B(Entry);
  Value *HasN = B.Insert(new ICmpInst(ICmpInst::ICMP_NE, AtomicN, ConstantPointerNull::get(Ptr)),
                         "nano.has_n");
  B.CreateCondBr(HasN, Bulk, Each);
  B.SetInsertPoint(Bulk);
  B.CreateCall(AtomicN->getFunctionType(), AtomicN, {Site, N})->setDoesNotThrow();
  B.CreateRetVoid();
  B.SetInsertPoint(Each);
  PHINode *Left = B.CreatePHI(I64, 2, "left");
  B.CreateCall(Atomic->getFunctionType(), Atomic, {Site})->setDoesNotThrow();
  Value *Next = B.CreateSub(Left, ConstantInt::get(I64, 1), "next");
  Left->addIncoming(N, Entry);
  Left->addIncoming(Next, Each);
  B.CreateCondBr(B.CreateICmpNE(Next, ConstantInt::get(I64, 0)), Each, Done);
  B.SetInsertPoint(Done);
  B.CreateRetVoid();
  return F;
}

// True when control can leave loop L only through its exit edges, so that a
// count kept in a register is always reported: every call in L is a site, or
// a plain `call` that is nounwind and willreturn (no invoke, no callbr, no
// call that may unwind, longjmp, exit or never come back).
static bool hostLoopPromotable(const Loop &L, const SmallPtrSetImpl<Instruction *> &SiteInsts) {
  for (BasicBlock *BB : L.blocks())
    for (Instruction &I : *BB) {
      auto *CB = dyn_cast<CallBase>(&I);
      if (!CB || SiteInsts.count(&I))
        continue;
      if (!isa<CallInst>(CB) || CB->mayThrow() || !CB->willReturn())
        return false;
    }
  return true;
}

// Emits, in the block that ends with Then, `flush(Site, N); *Ctr = 0` with Loc.
static void hostFlushCall(const HostHooks &H, Instruction *Then, Constant *Site, Value *N,
                          AllocaInst *Ctr, const DebugLoc &Loc) {
  IRBuilder<> TB(Then);
  TB.SetCurrentDebugLocation(Loc);
  TB.CreateCall(H.Flush->getFunctionType(), H.Flush, {Site, N})->setDoesNotThrow();
  TB.CreateStore(ConstantInt::get(N->getType(), 0), Ctr);
  Then->setDebugLoc(Loc);
}

// Instruments the sites Idx of F (all in F). Where promotion is on and F is
// optimised (not optnone), a site in a promotable loop is counted in a
// register and reported at the loop's exits and every HostPromoteFlush
// events; every other site gets a guarded hook call before its operation.
static void hostInstrumentFunction(Module &M, Function &F, ArrayRef<HostSite> Sites,
                                   ArrayRef<size_t> Idx, ArrayRef<Constant *> SitePtrs,
                                   HostHooks &H, bool Promote, FunctionAnalysisManager &FAM) {
  SmallVector<size_t, 8> Calls;
  MapVector<Loop *, SmallVector<size_t, 4>> Promoted;
  // The pass manager's trees (cached when an earlier pass computed them);
  // kept up to date while promoted loops are rewritten, then invalidated.
  DominatorTree *DT = nullptr;
  LoopInfo *LI = nullptr;
  if (Promote && !F.hasOptNone()) {
    DT = &FAM.getResult<DominatorTreeAnalysis>(F);
    LI = &FAM.getResult<LoopAnalysis>(F);
    SmallPtrSet<Instruction *, 16> SiteInsts;
    for (size_t I : Idx)
      SiteInsts.insert(Sites[I].I);
    DenseMap<Loop *, bool> Ok;
    for (size_t I : Idx) {
      Loop *L = LI->getLoopFor(Sites[I].I->getParent());
      if (L) {
        auto It = Ok.find(L);
        if (It == Ok.end())
          It = Ok.insert({L, hostLoopPromotable(*L, SiteInsts)}).first;
        if (It->second) {
          Promoted[L].push_back(I);
          continue;
        }
      }
      Calls.push_back(I);
    }
  } else {
    Calls.append(Idx.begin(), Idx.end());
  }

  // Dedicated exit blocks (their predecessors all in the loop), so that a
  // flush at an exit block's start runs exactly when control leaves the loop.
  for (auto &P : Promoted)
    formDedicatedExitBlocks(P.first, DT, LI, nullptr, false);
  MapVector<Loop *, SmallVector<BasicBlock *, 4>> Exits;
  for (auto &P : Promoted) {
    SmallVector<BasicBlock *, 4> &E = Exits[P.first];
    P.first->getUniqueExitBlocks(E);
    bool Usable = P.first->hasDedicatedExits();
    for (BasicBlock *BB : E)
      Usable = Usable && !BB->isEHPad();
    if (!Usable) {
      Calls.append(P.second.begin(), P.second.end());
      P.second.clear();
    } else if (!P.second.empty()) {
      ++NumPromotedLoops;
      NumPromotedSites += P.second.size();
    }
  }

  LLVMContext &Ctx = F.getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  auto *Null = ConstantPointerNull::get(cast<PointerType>(H.Atomic->getType()));
  MDNode *Rare = MDBuilder(Ctx).createBranchWeights(1, 1 << 20);
  SmallVector<AllocaInst *, 8> Counters;
  std::optional<DomTreeUpdater> DTU;
  if (DT)
    DTU.emplace(DT, DomTreeUpdater::UpdateStrategy::Eager);
  BasicBlock &Entry = F.getEntryBlock();
  for (auto &P : Promoted) {
    for (size_t I : P.second) {
      if (!H.Flush) {
        H.AtomicN = hostHook(
            M, "__nano_atomic_n",
            FunctionType::get(Type::getVoidTy(Ctx), {PointerType::getUnqual(Ctx), I64}, false));
        H.Flush = hostFlushFunction(M, H.Atomic, H.AtomicN);
      }
      Constant *Site = SitePtrs[I];
      IRBuilder<> EB(&Entry, Entry.begin());
      AllocaInst *Ctr = EB.CreateAlloca(I64, nullptr, "nano.count");
      EB.CreateStore(ConstantInt::get(I64, 0), Ctr);
      Counters.push_back(Ctr);

      // Before the operation: n += hooks present; report at the threshold.
      Instruction *At = Sites[I].I;
      DebugLoc Loc = At->getDebugLoc();
      IRBuilder<> B(At);
      Value *Hooked = B.Insert(new ICmpInst(ICmpInst::ICMP_NE, H.Atomic, Null), "nano.hooked");
      Value *N = B.CreateLoad(I64, Ctr, "nano.n");
      Value *N1 = B.CreateAdd(N, B.CreateZExt(Hooked, I64), "nano.n1");
      B.CreateStore(N1, Ctr);
      Value *Full = B.CreateICmpEQ(N1, ConstantInt::get(I64, HostPromoteFlush), "nano.full");
      Instruction *Then = SplitBlockAndInsertIfThen(Full, At, false, Rare, &*DTU, LI);
      cast<Instruction>(Full)->getParent()->getTerminator()->setDebugLoc(Loc);
      hostFlushCall(H, Then, Site, N1, Ctr, Loc);

      // At each exit: report what is left.
      for (BasicBlock *BB : Exits[P.first]) {
        Instruction *IP = &*BB->getFirstInsertionPt();
        DebugLoc XLoc = IP->getDebugLoc();
        IRBuilder<> XB(IP);
        Value *Left = XB.CreateLoad(I64, Ctr, "nano.left");
        Value *Any = XB.CreateICmpNE(Left, ConstantInt::get(I64, 0), "nano.any");
        Instruction *XThen = SplitBlockAndInsertIfThen(Any, IP, false, nullptr, &*DTU, LI);
        BB->getTerminator()->setDebugLoc(XLoc);
        hostFlushCall(H, XThen, Site, Left, Ctr, XLoc);
      }
    }
  }

  // Counters to registers while the tree still matches the function (the
  // guarded calls below split blocks without updating it).
  if (!Counters.empty())
    PromoteMemToReg(Counters, *DT);

  bool Inline = H.Ctr && !F.hasOptNone();
  for (size_t I : Calls) {
    if (Inline)
      hostInlineCount(H, SitePtrs[I], Sites[I].I, Sites[I].I->getDebugLoc());
    else
      hostGuardedCall(H.Atomic, SitePtrs[I], Sites[I].I, Sites[I].I->getDebugLoc());
  }
  (Inline ? NumInlineCounted : NumHookCalls) += Calls.size();
  FAM.invalidate(F, PreservedAnalyses::none());
}

// The name a site reports for the function of Loc's frame: its linkage
// (mangled) name, else its source name; "" when Loc has no subprogram.
static StringRef hostFrameFunction(const DILocation *Loc) {
  const DISubprogram *SP = Loc->getScope()->getSubprogram();
  if (!SP)
    return "";
  return SP->getLinkageName().empty() ? SP->getName() : SP->getLinkageName();
}

// Fills S's position from Loc, the operation's debug location. An operation
// written in a library file (std::atomic, shared_ptr's count, stdatomic.h)
// and inlined into the user's code is reported at the first frame of the
// inlining chain that is not in a library file, with the function of that
// frame; its own location is kept as S.Origin. When every frame is library
// code (nothing inlined, as at -O0 for functions that are not always_inline)
// the operation's own location stays and the site is flagged
// NANO_SITE_LIBRARY, so the runtime can find its callers on the stack.
static void hostAttribute(HostSite &S, const DILocation *Loc, const Regex &Library) {
  if (!Loc)
    return;
  const DILocation *At = Loc;
  for (const DILocation *L = Loc; L; L = L->getInlinedAt()) {
    std::string File = nano::normalizedPath(nano::sourceFile(L));
    if (!File.empty() && !Library.match(File)) {
      At = L;
      break;
    }
  }
  S.Origin = At == Loc ? nullptr : Loc;
  if (At == Loc) {
    std::string Own = nano::normalizedPath(nano::sourceFile(Loc));
    if (!Own.empty() && Library.match(Own))
      S.Flags |= NANO_SITE_LIBRARY;
  }
  S.File = nano::sourceFile(At);
  S.Line = At->getLine();
  S.Column = At->getColumn();
  S.Function = hostFrameFunction(At).str();
}

// A private constant holding S NUL-terminated, shared by equal strings.
static Constant *hostString(Module &M, StringMap<Constant *> &Strings, StringRef S) {
  Constant *&Slot = Strings[S];
  if (!Slot) {
    Constant *Init = ConstantDataArray::getString(M.getContext(), S, true);
    auto *GV =
        new GlobalVariable(M, Init->getType(), true, GlobalValue::PrivateLinkage, Init, "nano.str");
    GV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    GV->setAlignment(Align(1));
    Slot = GV;
  }
  return Slot;
}

// Emits the site table, the module record, the registering constructor and
// the instrumentation of each site (promoted in loops when Promote is set,
// counted in the program where Inline is set and the module allows it).
static void hostInstrument(Module &M, ArrayRef<HostSite> Sites, bool Promote, bool Inline,
                           FunctionAnalysisManager &FAM) {
  LLVMContext &Ctx = M.getContext();
  const DataLayout &DL = M.getDataLayout();
  Type *I8 = Type::getInt8Ty(Ctx), *I16 = Type::getInt16Ty(Ctx);
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  StructType *SiteTy = StructType::create(
      Ctx, {I32, I16, I8, I8, I32, I32, I32, I32, Ptr, Ptr, Ptr}, "struct.nano_site");
  StructType *ModTy =
      StructType::create(Ctx, {I32, I32, Ptr, Ptr, Ptr, I64, Ptr}, "struct.nano_site_module");
  StructType *OriginTy = StructType::create(Ctx, {Ptr, Ptr, I32, I32}, "struct.nano_site_origin");
  ArrayType *ArrTy = ArrayType::get(SiteTy, Sites.size());

  auto *Table =
      new GlobalVariable(M, ArrTy, false, GlobalValue::PrivateLinkage, nullptr, "nano.sites");
  Table->setAlignment(DL.getABITypeAlign(SiteTy));
  auto *Record =
      new GlobalVariable(M, ModTy, false, GlobalValue::PrivateLinkage, nullptr, "nano.module");
  Record->setAlignment(DL.getABITypeAlign(ModTy));

  StringMap<Constant *> Strings;
  SmallVector<Constant *, 64> Entries, Origins;
  Constant *NoString = ConstantPointerNull::get(Ptr);
  bool AnyOrigin = false;
  for (const HostSite &S : Sites) {
    StringRef Function = S.Function.empty() ? S.I->getFunction()->getName() : S.Function;
    Entries.push_back(ConstantStruct::get(
        SiteTy,
        {ConstantInt::get(I32, 0), ConstantInt::get(I16, S.Kind), ConstantInt::get(I8, S.Order),
         ConstantInt::get(I8, S.Flags), ConstantInt::get(I32, S.Size),
         ConstantInt::get(I32, S.Line), ConstantInt::get(I32, S.Column), ConstantInt::get(I32, 0),
         hostString(M, Strings, Function), hostString(M, Strings, S.File), Record}));
    if (const DILocation *O = S.Origin) {
      AnyOrigin = true;
      Origins.push_back(ConstantStruct::get(OriginTy, {hostString(M, Strings, hostFrameFunction(O)),
                                                       hostString(M, Strings, nano::sourceFile(O)),
                                                       ConstantInt::get(I32, O->getLine()),
                                                       ConstantInt::get(I32, O->getColumn())}));
    } else {
      Origins.push_back(ConstantStruct::get(
          OriginTy, {NoString, NoString, ConstantInt::get(I32, 0), ConstantInt::get(I32, 0)}));
    }
  }
  Table->setInitializer(ConstantArray::get(ArrTy, Entries));
  Constant *OriginTable = NoString;
  if (AnyOrigin) {
    ArrayType *OriginArrTy = ArrayType::get(OriginTy, Origins.size());
    auto *GV = new GlobalVariable(M, OriginArrTy, true, GlobalValue::PrivateLinkage,
                                  ConstantArray::get(OriginArrTy, Origins), "nano.origins");
    GV->setAlignment(DL.getABITypeAlign(OriginTy));
    OriginTable = GV;
  }
  Record->setInitializer(ConstantStruct::get(
      ModTy, {ConstantInt::get(I32, NANO_SITE_ABI), ConstantInt::get(I32, Sites.size()), Table,
              hostString(M, Strings, M.getSourceFileName()), NoString, ConstantInt::get(I64, 0),
              OriginTable}));

  FunctionType *HookTy = FunctionType::get(Type::getVoidTy(Ctx), {Ptr}, false);
  HostHooks H;
  H.Atomic = hostHook(M, "__nano_atomic", HookTy);
  Function *Register = hostHook(M, "__nano_register_module", HookTy);
  assert(H.Atomic && Register && "hook names were checked by hostHooksUsable");
  if (Inline)
    hostInlineSetup(M, H, FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Ptr}, false));

  Function *Ctor = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false),
                                    GlobalValue::InternalLinkage, "nano.module_ctor", M);
  Ctor->addFnAttr(Attribute::NoUnwind);
  ReturnInst *Ret = ReturnInst::Create(Ctx, BasicBlock::Create(Ctx, "entry", Ctor));
  hostGuardedCall(Register, Record, Ret, DebugLoc());
  appendToGlobalCtors(M, Ctor, 101);

  SmallVector<Constant *, 64> SitePtrs;
  MapVector<Function *, SmallVector<size_t, 8>> ByFunction;
  for (size_t Idx = 0; Idx < Sites.size(); ++Idx) {
    SitePtrs.push_back(ConstantExpr::getInBoundsGetElementPtr(
        ArrTy, Table, ArrayRef<Constant *>{ConstantInt::get(I64, 0), ConstantInt::get(I64, Idx)}));
    ByFunction[Sites[Idx].I->getFunction()].push_back(Idx);
  }
  for (auto &P : ByFunction)
    hostInstrumentFunction(M, *P.first, Sites, P.second, SitePtrs, H, Promote, FAM);
  M.addModuleFlag(Module::Max, "nano.atomics", 1);
}

// True when the hook names are free or declared as functions of the hooks'
// types: `void (ptr)`, and `void (ptr, i64)` for __nano_atomic_n (not
// checked when HookNTy is null).
static bool hostHooksUsable(Module &M, FunctionType *HookTy, FunctionType *HookNTy) {
  for (const char *Hook : {"__nano_atomic", "__nano_atomic_n", "__nano_register_module"}) {
    if (!HookNTy && StringRef(Hook) == "__nano_atomic_n")
      continue;
    GlobalValue *GV = M.getNamedValue(Hook);
    auto *F = dyn_cast_or_null<Function>(GV);
    FunctionType *Ty = StringRef(Hook) == "__nano_atomic_n" ? HookNTy : HookTy;
    if (GV && (!F || F->getFunctionType() != Ty))
      return false;
  }
  return true;
}

PreservedAnalyses HostAtomicsPass::run(Module &M, ModuleAnalysisManager &MAM) {
  bool Diagnose = false;
  std::string Why = hostSkipModule(M, Diagnose);
  if (!Why.empty()) {
    if (Diagnose)
      hostDiagnose(M, Why);
    return PreservedAnalyses::all();
  }
  const HostConfig &Config = hostConfig();
  if (!Config.Error.empty()) {
    M.getContext().emitError("nanoprobe: " + Config.Error);
    return PreservedAnalyses::all();
  }
  if (Config.Kinds.none())
    return PreservedAnalyses::all();

  SmallPtrSet<Function *, 8> NoInstrument;
  bool ModuleMarked = false;
  hostAnnotated(M, "nano_no_instrument", NoInstrument, ModuleMarked);
  if (ModuleMarked)
    return PreservedAnalyses::all();

  const DataLayout &DL = M.getDataLayout();
  std::string ModuleFile = M.getSourceFileName();
  std::vector<HostSite> Sites;
  for (Function &F : M) {
    if (hostSkipFunction(F, NoInstrument))
      continue;
    if (Config.Functions && !Config.Functions->match(F.getName()))
      continue;
    if (Config.ExcludeFunctions && Config.ExcludeFunctions->match(F.getName()))
      continue;
    for (Instruction &I : instructions(F)) {
      HostSite S;
      if (!hostClassify(I, DL, S) || !Config.Kinds.test(S.Kind))
        continue;
      S.I = &I;
      hostAttribute(S, I.getDebugLoc().get(), *Config.LibraryFiles);
      // filters match the file the operation is written in
      const std::string Own = S.Origin ? nano::sourceFile(S.Origin) : S.File;
      const std::string Where = nano::normalizedPath(Own.empty() ? ModuleFile : Own);
      if (Config.Files && !Config.Files->match(Where))
        continue;
      if (Config.ExcludeFiles && Config.ExcludeFiles->match(Where))
        continue;
      Sites.push_back(std::move(S));
    }
  }
  if (Sites.empty())
    return PreservedAnalyses::all();
  if (Sites.size() > UINT32_MAX) {
    hostDiagnose(M, "more than 2^32 atomic sites");
    return PreservedAnalyses::all();
  }
  LLVMContext &Ctx = M.getContext();
  PointerType *Ptr = PointerType::getUnqual(Ctx);
  FunctionType *HookTy = FunctionType::get(Type::getVoidTy(Ctx), {Ptr}, false);
  FunctionType *HookNTy =
      FunctionType::get(Type::getVoidTy(Ctx), {Ptr, Type::getInt64Ty(Ctx)}, false);
  if (!hostHooksUsable(M, HookTy, HookNTy)) {
    hostDiagnose(M, hostHooksUsable(M, HookTy, nullptr)
                        ? "__nano_atomic_n is declared with another type"
                        : "__nano_atomic or __nano_register_module is declared with another type");
    return PreservedAnalyses::all();
  }
  NumSites += Sites.size();
  for (const HostSite &S : Sites) {
    NumInlinedSites += S.Origin != nullptr;
    NumLibrarySites += (S.Flags & NANO_SITE_LIBRARY) != 0;
  }
  hostInstrument(M, Sites, Config.Promote, Config.Inline,
                 MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager());
  return PreservedAnalyses::none();
}

void nano::registerHostAtomics(PassBuilder &PB) {
  compat::registerModulePass<HostAtomicsPass>(PB, "nano-atomics", compat::PassPoint::OptimizerLast);
}
