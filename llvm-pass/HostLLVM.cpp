//===- HostLLVM.cpp - refuse to run inside another LLVM --------------------===//
//
// The plugin is built against one LLVM and resolves its symbols against the
// LLVM of the compiler that loads it (it links no libLLVM). Loaded by a clang
// or opt of another LLVM version it would call functions whose classes have
// another layout and crash inside the compiler, already while the plugin is
// loaded (the constructors of its cl::opt options register with the
// compiler's option parser). So a constructor that runs before every other
// one of the plugin (priority HostCheckPriority) looks at the LLVM libraries
// loaded in the process (libLLVM-15.so.1, libLLVM.so.22.1, ...); when one of
// another major version is there, it says so in one line naming this
// plugin's LLVM, the compiler's and the matching plugin when one is found,
// and ends the compiler with status 1: an error, not a crash.
//
// Nothing here may call into LLVM: its ABI is what is in doubt. A compiler
// linked statically against LLVM shows no library; then nothing is checked.
//
// Where the matching plugin is looked for, from this plugin's folder D:
//   D/../llvm-<M>/libNanoPass.so             an installed prefix
//                                             (lib/nanoprobe/llvm-<M>/)
//   the plugin builds of the build tree       NANO_PASS_BUILDS_LIST,
//                                             "<major>|<path>,..." (CMake)
//
//===----------------------------------------------------------------------===//
#include "llvm/Config/llvm-config.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#ifndef NANO_PASS_BUILDS_LIST
#define NANO_PASS_BUILDS_LIST ""
#endif

namespace {

// The first LLVM library in the process whose major version is not ours.
struct ForeignLLVM {
  int Major = 0;
  std::string Path;
};

// The major version in a libLLVM file name: libLLVM-15.so.1 (Debian up to
// 17), libLLVM.so.22.1 (later); 0 when the name is no LLVM library.
int llvmMajorOfLibrary(const char *Path) {
  const char *Base = strrchr(Path, '/');
  Base = Base ? Base + 1 : Path;
  if (strncmp(Base, "libLLVM", 7) != 0)
    return 0;
  const char *P = Base + 7;
  if (*P == '-')
    return atoi(P + 1);
  if (strncmp(P, ".so.", 4) == 0)
    return atoi(P + 4);
  return 0;
}

int findForeignLLVM(struct dl_phdr_info *Info, size_t, void *Data) {
  auto *F = static_cast<ForeignLLVM *>(Data);
  int Major = llvmMajorOfLibrary(Info->dlpi_name ? Info->dlpi_name : "");
  if (Major > 0 && Major != LLVM_VERSION_MAJOR) {
    F->Major = Major;
    F->Path = Info->dlpi_name;
    return 1;
  }
  return 0;
}

std::string pluginPath() {
  Dl_info Info;
  if (!dladdr(reinterpret_cast<void *>(&llvmMajorOfLibrary), &Info) || !Info.dli_fname)
    return "libNanoPass.so";
  return Info.dli_fname;
}

// The plugin built for LLVM `Major`, "" when none is found.
std::string matchingPlugin(const std::string &Self, int Major) {
  size_t Slash = Self.rfind('/');
  std::string Dir = Slash == std::string::npos ? "." : Self.substr(0, Slash);
  std::string Installed = Dir + "/../llvm-" + std::to_string(Major) + "/libNanoPass.so";
  if (access(Installed.c_str(), R_OK) == 0)
    return Installed;
  std::string Builds = NANO_PASS_BUILDS_LIST;
  for (size_t Pos = 0; Pos < Builds.size();) {
    size_t End = Builds.find(',', Pos);
    if (End == std::string::npos)
      End = Builds.size();
    std::string Entry = Builds.substr(Pos, End - Pos);
    size_t Bar = Entry.find('|');
    if (Bar != std::string::npos && atoi(Entry.c_str()) == Major &&
        access(Entry.c_str() + Bar + 1, R_OK) == 0)
      return Entry.substr(Bar + 1);
    Pos = End + 1;
  }
  return "";
}

} // namespace

// Runs before the plugin's other constructors (101 is the first priority
// not reserved for the implementation).
#define HostCheckPriority 101
// The compiler's exit status when the plugin refuses it.
static constexpr int RefusedStatus = 1;

__attribute__((constructor(HostCheckPriority))) static void checkHostLLVM() {
  ForeignLLVM F;
  if (!dl_iterate_phdr(findForeignLLVM, &F))
    return;
  std::string Self = pluginPath();
  std::string Match = matchingPlugin(Self, F.Major);
  fprintf(stderr, "nanoprobe: %s is built for LLVM %d, but this compiler is LLVM %d (%s); %s%s\n",
          Self.c_str(), LLVM_VERSION_MAJOR, F.Major, F.Path.c_str(),
          Match.empty() ? "no plugin for that LLVM was found: build one (llvm-pass/README.md)"
                        : "use ",
          Match.c_str());
  fflush(stderr);
  _exit(RefusedStatus);
}
