//===- Diagnostic.cpp - compiler warnings of the plugin --------------------===//
//
// One diagnostic kind for every warning the plugin gives; clang prints them as
// "warning: nanoprobe: ... [-Wbackend-plugin]".
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"

using namespace llvm;

namespace {
class NanoDiagnostic : public DiagnosticInfo {
  const std::string &Msg;

public:
  explicit NanoDiagnostic(const std::string &Msg) : DiagnosticInfo(Kind, DS_Warning), Msg(Msg) {}
  void print(DiagnosticPrinter &DP) const override { DP << Msg; }
  static const int Kind;
};
const int NanoDiagnostic::Kind = getNextAvailablePluginDiagnosticKind();
} // namespace

void nano::warning(LLVMContext &Ctx, const Twine &Msg) {
  std::string S = Msg.str();
  Ctx.diagnose(NanoDiagnostic(S));
}
