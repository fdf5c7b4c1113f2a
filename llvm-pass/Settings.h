//===- Settings.h - the plugin's settings, one reader and one policy -------===//
//
// Every setting of libNanoPass.so has a -mllvm option and a NANO_* environment
// variable (docs/ENVIRONMENT.md); the option, when given, wins. Options are
// named per half: -nano-atomics-* for host atomics, -nano-device-* for kernel
// twins (the older -nano-kernels, -nano-scope, -nano-access, -nano-addrspaces
// and -nano-inline-runtime stay as aliases).
//
// One policy for both halves: a malformed value is a compile error that names
// the option or variable, the value and what is expected. Nothing falls back
// silently, and no typo turns instrumentation into "everything" or "nothing".
//
//===----------------------------------------------------------------------===//
#ifndef NANO_SETTINGS_H
#define NANO_SETTINGS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Regex.h"

#include <cstdint>
#include <memory>
#include <string>

namespace nano {

// A setting's text and the name it came from ("-nano-atomics-kinds" or
// "NANO_ATOMICS_KINDS"), for messages. Value is "" when neither is set.
struct Setting {
  std::string Value;
  std::string Name;
  bool isSet() const { return !Value.empty(); }
};

// Reads option Opt when given on the command line, else environment Env.
Setting readSetting(const llvm::cl::opt<std::string> &Opt, const char *Env);

// One name of a list setting and the bits it stands for.
struct NamedBits {
  const char *Name;
  uint64_t Bits;
};

// Parses S as a comma list of names from Table into the union of their bits.
// An unknown name or a list with no name at all is an error (Err says which,
// and lists Table's names). Spaces around names, and Prefix before one, are
// ignored.
bool parseBitList(const Setting &S, llvm::ArrayRef<NamedBits> Table, uint64_t &Out,
                  std::string &Err, llvm::StringRef Prefix = "");

// Parses S as 0 or 1.
bool parseSwitch(const Setting &S, bool &Out, std::string &Err);

// Compiles S as a regular expression (wrapped as ^(S)$ when Anchored) into Out.
bool parseRegex(const Setting &S, bool Anchored, std::unique_ptr<llvm::Regex> &Out,
                std::string &Err);

} // namespace nano

#endif
