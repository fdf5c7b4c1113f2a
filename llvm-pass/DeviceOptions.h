//===- DeviceOptions.h - filters and runtime location of the device pass ---===//
//
// What the device pass instruments (kernel regex, source scope, access kinds,
// address spaces) and where it finds the device runtime bitcode. Every setting
// comes from a -mllvm option or, when the option is not given, from its NANO_*
// environment variable (docs/ENVIRONMENT.md). A malformed value is a compile
// error naming the variable.
//
//===----------------------------------------------------------------------===//
#ifndef NANO_DEVICE_OPTIONS_H
#define NANO_DEVICE_OPTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"

#include <memory>
#include <string>
#include <vector>

namespace nano {

// The parsed filters. Default: every kernel, every line, loads, stores and
// atomics, global and generic address spaces.
struct DeviceFilters {
  std::unique_ptr<llvm::Regex> Kernels; // null: every kernel
  struct Range {
    std::string File; // matched as a path suffix on a '/' boundary
    unsigned First = 0, Last = ~0u;
  };
  std::vector<Range> Scope;   // empty: everything
  unsigned Kinds = 0;         // bit (1 << NANO_DH_KIND_*)
  unsigned Spaces = 0;        // bit (1 << NANO_DH_AS_*)
  bool InlineRuntime = false; // inline the runtime at every site

  // True when kernel Name (mangled) or its demangled form matches.
  bool kernelSelected(llvm::StringRef Name) const;
  // True when File:Line is in scope (always, without NANO_SCOPE).
  bool inScope(llvm::StringRef File, unsigned Line) const;
};

// Parses the filters; on a malformed one returns false with Err naming the
// variable (or option) and the defect.
bool parseDeviceFilters(DeviceFilters &F, std::string &Err);

// Finds nano_dh_<Flavour>.bc: -nano-device-dir, NANO_DEVICE_DIR, then next to
// the plugin (<plugin dir>/../dh_comms, <plugin dir>/device, installed).
// Returns the path, or "" with Err listing the places searched.
std::string findDeviceBitcode(llvm::StringRef Flavour, std::string &Err);

} // namespace nano

#endif
