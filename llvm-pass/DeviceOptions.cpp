//===- DeviceOptions.cpp - filters and runtime location of the device pass -===//
//
// Parsing of NANO_KERNELS, NANO_SCOPE, NANO_ACCESS, NANO_ADDRSPACES and the
// search for the device runtime bitcode (see DeviceOptions.h), through the
// plugin's one settings layer (Settings.h).
//
//===----------------------------------------------------------------------===//
#include "DeviceOptions.h"
#include "Compat.h"
#include "Settings.h"

#include "nano/dh_format.h"

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

static cl::opt<std::string> ClKernels("nano-device-kernels",
                                      cl::desc("Regex of the kernels that get twins "
                                               "(overrides NANO_KERNELS)"));
static cl::opt<std::string> ClScope("nano-device-scope",
                                    cl::desc("Source scope instrumented in twins: "
                                             "file[:first-last],... (overrides NANO_SCOPE)"));
static cl::opt<std::string> ClAccess("nano-device-access",
                                     cl::desc("Access kinds instrumented: load,store,atomic "
                                              "(overrides NANO_ACCESS)"));
static cl::opt<std::string> ClSpaces("nano-device-addrspaces",
                                     cl::desc("Address spaces instrumented: "
                                              "global,generic,shared,constant "
                                              "(overrides NANO_ADDRSPACES)"));
static cl::opt<std::string> ClInline("nano-device-inline",
                                     cl::desc("1: inline the device runtime at every "
                                              "instrumented access (overrides "
                                              "NANO_DEVICE_INLINE)"));
static cl::opt<std::string> ClDeviceDir("nano-device-dir", cl::desc("Directory of nano_dh_*.bc "
                                                                    "(overrides NANO_DEVICE_DIR)"));
// The options' first names, kept for existing build lines.
static cl::alias ClKernelsOld("nano-kernels", cl::aliasopt(ClKernels),
                              cl::desc("Alias for -nano-device-kernels"));
static cl::alias ClScopeOld("nano-scope", cl::aliasopt(ClScope),
                            cl::desc("Alias for -nano-device-scope"));
static cl::alias ClAccessOld("nano-access", cl::aliasopt(ClAccess),
                             cl::desc("Alias for -nano-device-access"));
static cl::alias ClSpacesOld("nano-addrspaces", cl::aliasopt(ClSpaces),
                             cl::desc("Alias for -nano-device-addrspaces"));
static cl::alias ClInlineOld("nano-inline-runtime", cl::aliasopt(ClInline),
                             cl::desc("Alias for -nano-device-inline"));

bool nano::parseDeviceFilters(DeviceFilters &F, std::string &Err) {
  Setting Kernels = readSetting(ClKernels, "NANO_KERNELS");
  if (Kernels.isSet() && !parseRegex(Kernels, true, F.Kernels, Err))
    return false;

  Setting Scope = readSetting(ClScope, "NANO_SCOPE");
  const std::string &Name = Scope.Name;
  if (Scope.isSet()) {
    SmallVector<StringRef, 8> Parts;
    StringRef(Scope.Value).split(Parts, ',');
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

  static const NamedBits Kinds[] = {{"load", 1u << NANO_DH_KIND_LOAD},
                                    {"store", 1u << NANO_DH_KIND_STORE},
                                    {"atomic", 1u << NANO_DH_KIND_ATOMIC}};
  uint64_t Bits = 1u << NANO_DH_KIND_LOAD | 1u << NANO_DH_KIND_STORE | 1u << NANO_DH_KIND_ATOMIC;
  Setting Access = readSetting(ClAccess, "NANO_ACCESS");
  if (Access.isSet() && !parseBitList(Access, Kinds, Bits, Err))
    return false;
  F.Kinds = unsigned(Bits);

  static const NamedBits Spaces[] = {
      {"generic", 1u << NANO_DH_AS_GENERIC}, {"flat", 1u << NANO_DH_AS_GENERIC},
      {"global", 1u << NANO_DH_AS_GLOBAL},   {"shared", 1u << NANO_DH_AS_SHARED},
      {"lds", 1u << NANO_DH_AS_SHARED},      {"constant", 1u << NANO_DH_AS_CONSTANT}};
  Bits = 1u << NANO_DH_AS_GENERIC | 1u << NANO_DH_AS_GLOBAL;
  Setting AS = readSetting(ClSpaces, "NANO_ADDRSPACES");
  if (AS.isSet() && !parseBitList(AS, Spaces, Bits, Err))
    return false;
  F.Spaces = unsigned(Bits);

  Setting Inline = readSetting(ClInline, "NANO_DEVICE_INLINE");
  return !Inline.isSet() || parseSwitch(Inline, F.InlineRuntime, Err);
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
  Setting Dir = readSetting(ClDeviceDir, "NANO_DEVICE_DIR");
  if (Dir.isSet()) {
    Dirs.push_back(Dir.Value);
  } else {
    std::string P = devicePluginDir();
    if (!P.empty()) {
      Dirs.push_back(P + "/../dh_comms");
      Dirs.push_back(P + "/device");
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
