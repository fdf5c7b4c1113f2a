// C++: a launch with a destructor in scope (the calls are invokes) and a
// template kernel in a namespace: routed, the invoke turned into a call; the
// twin is the mangled name plus Pv.
// RUN: %clangxx_nano -O2 -fexceptions -I%dh_include -S -emit-llvm %s -o - | FileCheck %s
#include "nano/kernel.h"

namespace ns {
template <typename T> void k(T *p, T v);
}
struct guard {
  ~guard();
};

// CHECK-LABEL: define {{.*}}void @_Z6launchPf(
// CHECK: call void @__nano_cpu_launch(ptr {{.*}}@nano.launch._ZN2ns1kIfEEvPT_S1_,
// CHECK-NOT: invoke void @__nano_cpu_launch
// CHECK: invoke void @_ZN2ns1kIfEEvPT_S1_(
void launch(float *p) {
  guard g;
  NANO_LAUNCH(nano_dim(2, 1, 1), nano_dim(32, 1, 1), ns::k<float>(p, 2.0f));
}
// CHECK: declare extern_weak void @__nano_twin__ZN2ns1kIfEEvPT_S1_Pv(ptr, float, ptr)
