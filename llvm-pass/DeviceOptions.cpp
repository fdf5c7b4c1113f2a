//===- DeviceOptions.cpp - filters and runtime location of the device pass -===//
//
// Parsing of NANO_KERNELS, NANO_SCOPE, NANO_ACCESS, NANO_ADDRSPACES and the
// search for the device runtime bitcode (see DeviceOptions.h). A -mllvm option
// given on the command line wins over its environment variable.
//
//===----------------------------------------------------------------------===//
#include "DeviceOptions.h"
#include "Compat.h"

#include "../dh_comms/include/nano/dh_format.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace llvm;
using namespace nano;

static cl::opt<std::string> ClKernels("nano-kernels",
                                      cl::desc("Regex of the kernels that get twins "
                                               "(overrides NANO_KERNELS)"));
static cl::opt<std::string> ClScope("nano-scope",
                                    cl::desc("Source scope instrumented in twins: "
                                             "file[:first-last],... (overrides NANO_SCOPE)"));
static cl::opt<std::string> ClAccess("nano-access",
                                     cl::desc("Access kinds instrumented: load,store,atomic "
                                              "(overrides NANO_ACCESS)"));
static cl::opt<std::string> ClSpaces("nano-addrspaces",
                                     cl::desc("Address spaces instrumented: "
                                              "global,generic,shared,constant "
                                              "(overrides NANO_ADDRSPACES)"));
static cl::opt<std::string> ClInline("nano-inline-runtime",
                                     cl::desc("1: inline the device runtime at every "
                                              "instrumented access (overrides "
                                              "NANO_DEVICE_INLINE)"));
static cl::opt<std::string> ClDeviceDir("nano-device-dir",
                                        cl::desc("Directory of nano_dh_*.bc "
                                                 "(overrides NANO_DEVICE_DIR)"));

// The value of option O if given, else of environment variable Env; Name is
// set to what the value came from, for error messages.
static std::string deviceSetting(const cl::opt<std::string> &O, const char *Env,
                                 std::string &Name) {
  if (O.getNumOccurrences()) {
    Name = "-" + O.ArgStr.str();
    return O;
  }
  Name = Env;
  const char *V = std::getenv(Env);
  return V ? V : "";
}

// Parses a comma list of names into a bit set; Table maps names to bits.
static bool deviceParseSet(StringRef Value, const std::string &Name,
                           ArrayRef<std::pair<const char *, unsigned>> Table, unsigned &Out,
                           std::string &Err) {
  Out = 0;
  SmallVector<StringRef, 8> Parts;
  Value.split(Parts, ',');
  for (StringRef P : Parts) {
    P = P.trim();
    bool Found = false;
    for (auto &E : Table)
      if (P == E.first) {
        Out |= 1u << E.second;
        Found = true;
      }
    if (!Found) {
      Err = Name + ": unknown value '" + P.str() + "' (expected a comma list of";
      for (auto &E : Table)
        Err += std::string(" ") + E.first;
      Err += ")";
      return false;
    }
  }
  return true;
}

bool nano::parseDeviceFilters(DeviceFilters &F, std::string &Err) {
  std::string Name;
  std::string Kernels = deviceSetting(ClKernels, "NANO_KERNELS", Name);
  if (!Kernels.empty()) {
    F.Kernels = std::make_unique<Regex>("^(" + Kernels + ")$");
    std::string RErr;
    if (!F.Kernels->isValid(RErr)) {
      Err = Name + ": invalid regular expression '" + Kernels + "': " + RErr;
      return false;
    }
  }

  std::string Scope = deviceSetting(ClScope, "NANO_SCOPE", Name);
  if (!Scope.empty()) {
    SmallVector<StringRef, 8> Parts;
    StringRef(Scope).split(Parts, ',');
    for (StringRef P : Parts) {
      P = P.trim();
      DeviceFilters::Range R;
      auto Colon = P.rfind(':');
      StringRef File = P, Lines;
      if (Colon != StringRef::npos) {
        File = P.substr(0, Colon);
        Lines = P.substr(Colon + 1);
      }
      if (File.empty()) {
        Err = Name + ": empty file name in '" + P.str() + "' (expected file[:first-last])";
        return false;
      }
      R.File = File.str();
      if (!Lines.empty()) {
        auto Dash = Lines.split('-');
        if (Dash.first.trim().getAsInteger(10, R.First) ||
            (Dash.second.empty() ? (R.Last = R.First, false)
                                 : Dash.second.trim().getAsInteger(10, R.Last)) ||
            R.First > R.Last) {
          Err = Name + ": bad line range '" + Lines.str() + "' in '" + P.str() +
                "' (expected first-last, first <= last)";
          return false;
        }
      }
      F.Scope.push_back(R);
    }
  }

  static const std::pair<const char *, unsigned> Kinds[] = {
      {"load", NANO_DH_KIND_LOAD}, {"store", NANO_DH_KIND_STORE}, {"atomic", NANO_DH_KIND_ATOMIC}};
  std::string Access = deviceSetting(ClAccess, "NANO_ACCESS", Name);
  if (Access.empty())
    F.Kinds = 1u << NANO_DH_KIND_LOAD | 1u << NANO_DH_KIND_STORE | 1u << NANO_DH_KIND_ATOMIC;
  else if (!deviceParseSet(Access, Name, Kinds, F.Kinds, Err))
    return false;

  static const std::pair<const char *, unsigned> Spaces[] = {
      {"generic", NANO_DH_AS_GENERIC},
      {"flat", NANO_DH_AS_GENERIC},
      {"global", NANO_DH_AS_GLOBAL},
      {"shared", NANO_DH_AS_SHARED},
      {"lds", NANO_DH_AS_SHARED},
      {"constant", NANO_DH_AS_CONSTANT}};
  std::string AS = deviceSetting(ClSpaces, "NANO_ADDRSPACES", Name);
  if (AS.empty())
    F.Spaces = 1u << NANO_DH_AS_GENERIC | 1u << NANO_DH_AS_GLOBAL;
  else if (!deviceParseSet(AS, Name, Spaces, F.Spaces, Err))
    return false;

  std::string Inline = deviceSetting(ClInline, "NANO_DEVICE_INLINE", Name);
  if (Inline == "1")
    F.InlineRuntime = true;
  else if (!Inline.empty() && Inline != "0") {
    Err = Name + ": expected 0 or 1, not '" + Inline + "'";
    return false;
  }
  return true;
}

bool nano::DeviceFilters::kernelSelected(StringRef Name) const {
  if (!Kernels)
    return true;
  if (Kernels->match(Name))
    return true;
  std::string D = llvm::demangle(Name.str());
  if (D != Name && Kernels->match(D))
    return true;
  // A demangled C++ name also matches by its bare function name.
  auto Paren = D.find('(');
  if (Paren != std::string::npos) {
    StringRef Bare = StringRef(D).substr(0, Paren);
    auto Space = Bare.rfind(' ');
    if (Space != StringRef::npos)
      Bare = Bare.substr(Space + 1);
    auto Angle = Bare.find('<');
    if (Angle != StringRef::npos)
      Bare = Bare.substr(0, Angle);
    if (Kernels->match(Bare))
      return true;
  }
  return false;
}

bool nano::DeviceFilters::inScope(StringRef File, unsigned Line) const {
  if (Scope.empty())
    return true;
  for (const Range &R : Scope) {
    StringRef Want(R.File);
    if (!compat::endsWith(File, Want))
      continue;
    if (File.size() != Want.size() && File[File.size() - Want.size() - 1] != '/')
      continue;
    if (Line >= R.First && Line <= R.Last)
      return true;
  }
  return false;
}

// The directory of this plugin, found through the address of a function in
// it ("" when dladdr cannot tell).
static std::string devicePluginDir() {
  Dl_info Info;
  if (!dladdr(reinterpret_cast<void *>(&devicePluginDir), &Info) || !Info.dli_fname)
    return "";
  SmallString<256> P(Info.dli_fname);
  sys::path::remove_filename(P);
  return std::string(P.str());
}

std::string nano::findDeviceBitcode(StringRef Flavour, std::string &Err) {
  std::string File = ("nano_dh_" + Flavour + ".bc").str();
  std::vector<std::string> Dirs;
  std::string Name;
  std::string Dir = deviceSetting(ClDeviceDir, "NANO_DEVICE_DIR", Name);
  if (!Dir.empty()) {
    Dirs.push_back(Dir);
  } else {
    std::string P = devicePluginDir();
    if (!P.empty()) {
      Dirs.push_back(P + "/../dh_comms");
      Dirs.push_back(P + "/../share/nanoprobe/device");
    }
  }
  for (const std::string &D : Dirs) {
    std::string Path = D + "/" + File;
    if (sys::fs::exists(Path))
      return Path;
  }
  Err = "nanoprobe: device runtime " + File + " not found in";
  for (const std::string &D : Dirs)
    Err += " " + D;
  if (Dirs.empty())
    Err += " (no directory: set NANO_DEVICE_DIR)";
  return "";
}
