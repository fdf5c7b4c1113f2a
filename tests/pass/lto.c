// With -flto (full and thin) the pass runs in the compile step, so the
// bitcode handed to the linker is already instrumented and carries the
// "nano.atomics" flag (a link-time run of the plugin leaves it alone).
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -flto -O2 -c -o %t.full.bc %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -flto=thin -O2 -c -o %t.thin.bc %s
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -flto -O0 -c -o %t.o0.bc %s
// RUN: %opt -S %t.full.bc | FileCheck %s
// RUN: %opt -S %t.thin.bc | FileCheck %s
// RUN: %opt -S %t.o0.bc | FileCheck %s
// And the instrumented bitcode links into a working program (lld):
// RUN: %clang -flto -fuse-ld=lld -O2 %t.full.bc -o %t.full.exe
// RUN: %t.full.exe

// CHECK: @nano.sites = private global [1 x %struct.nano_site]
// CHECK: call void @__nano_atomic(ptr @nano.sites)
// CHECK: atomicrmw add
// CHECK: !"nano.atomics", i32 1}

int counter;
int main(void) { return __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST) != 1; }
