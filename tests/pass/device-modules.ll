; Device modules (amdgcn, nvptx, spirv) are left to the device pass: the host
; pass leaves them byte for byte unchanged, atomics and all.
; RUN: %opt -mtriple=amdgcn-amd-amdhsa -S %s -o %t.amd.ref.ll
; RUN: %opt_nano -mtriple=amdgcn-amd-amdhsa -passes=nano-atomics -S %s -o %t.amd.ll
; RUN: diff %t.amd.ref.ll %t.amd.ll
; RUN: %opt -mtriple=nvptx64-nvidia-cuda -S %s -o %t.ptx.ref.ll
; RUN: %opt_nano -mtriple=nvptx64-nvidia-cuda -passes=nano-atomics -S %s -o %t.ptx.ll
; RUN: diff %t.ptx.ref.ll %t.ptx.ll
; RUN: %opt -mtriple=spirv64-unknown-unknown -S %s -o %t.spv.ref.ll
; RUN: %opt_nano -mtriple=spirv64-unknown-unknown -passes=nano-atomics -S %s -o %t.spv.ll
; RUN: diff %t.spv.ref.ll %t.spv.ll
; The same input on a host triple is instrumented (the test can fail):
; RUN: %opt_nano -mtriple=x86_64-pc-linux-gnu -passes=nano-atomics -S %s | FileCheck %s
; CHECK: call void @__nano_atomic(

define void @k(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  fence seq_cst
  ret void
}
