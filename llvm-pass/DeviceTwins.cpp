//===- DeviceTwins.cpp - placeholder until the device pass lands ----------===//
//
// placeholder until the device pass lands: the device helper replaces this
// file with the kernel-twin and device memory instrumentation passes.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "llvm/Passes/PassBuilder.h"

void nano::registerDeviceInstrumentation(llvm::PassBuilder &) {}
