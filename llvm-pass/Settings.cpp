//===- Settings.cpp - the plugin's settings (see Settings.h) ---------------===//
#include "Settings.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llvm;

nano::Setting nano::readSetting(const cl::opt<std::string> &Opt, const char *Env) {
  if (Opt.getNumOccurrences() > 0)
    return {Opt.getValue(), ("-" + Opt.ArgStr).str()};
  const char *V = std::getenv(Env);
  // Set but empty (`NANO_KERNELS= make`): the default, as unset, but said
  // (once per variable and compiler process), as the runtime says its own.
  static StringSet<> Said;
  if (V && !*V && Said.insert(Env).second)
    errs() << "warning: nanoprobe: " << Env << " is set but empty: its default is used\n";
  return {V ? V : "", Env};
}

bool nano::parseBitList(const Setting &S, ArrayRef<NamedBits> Table, uint64_t &Out,
                        std::string &Err, StringRef Prefix) {
  uint64_t Bits = 0;
  unsigned Names = 0;
  SmallVector<StringRef, 8> Parts;
  StringRef(S.Value).split(Parts, ',');
  for (StringRef P : Parts) {
    P = P.trim();
    if (!Prefix.empty() && P.size() > Prefix.size() && P.substr(0, Prefix.size()) == Prefix)
      P = P.drop_front(Prefix.size());
    if (P.empty())
      continue;
    const NamedBits *Hit = nullptr;
    for (const NamedBits &E : Table)
      if (P == E.Name)
        Hit = &E;
    if (!Hit) {
      Err = S.Name + "=" + S.Value + ": unknown name '" + P.str() + "' (known:";
      for (const NamedBits &E : Table)
        Err += std::string(" ") + E.Name;
      Err += ")";
      return false;
    }
    Bits |= Hit->Bits;
    ++Names;
  }
  if (Names == 0) {
    Err = S.Name + "='" + S.Value + "': an empty list (name at least one, or unset it)";
    return false;
  }
  Out = Bits;
  return true;
}

bool nano::parseSwitch(const Setting &S, bool &Out, std::string &Err) {
  if (S.Value != "0" && S.Value != "1") {
    Err = S.Name + "=" + S.Value + ": expected 0 or 1";
    return false;
  }
  Out = S.Value == "1";
  return true;
}

bool nano::parseRegex(const Setting &S, bool Anchored, std::unique_ptr<Regex> &Out,
                      std::string &Err) {
  auto R = std::make_unique<Regex>(Anchored ? "^(" + S.Value + ")$" : S.Value);
  std::string Why;
  if (!R->isValid(Why)) {
    Err = S.Name + "=" + S.Value + ": invalid regular expression (" + Why + ")";
    return false;
  }
  Out = std::move(R);
  return true;
}
