; The pass only adds: every atomic operation of the input is in the output,
; byte for byte (same width, ordering, operands and result name), in order.
; RUN: %opt -S %s | sed -n '/define i64 @mix/,/^}/p' | grep -E 'atomicrmw|cmpxchg|load atomic|store atomic|fence|ret ' > %t.before
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-inline=0 -S %s > %t.ll
; RUN: sed -n '/define i64 @mix/,/^}/p' %t.ll | grep -E 'atomicrmw|cmpxchg|load atomic|store atomic|fence|ret ' > %t.after
; RUN: diff %t.before %t.after
; RUN: grep -c 'call void @__nano_atomic(' %t.ll | FileCheck --check-prefix=CALLS %s
; CALLS: 7

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

define i64 @mix(ptr %p, i64 %v) {
  %a = atomicrmw add ptr %p, i64 %v seq_cst, align 8
  %b = cmpxchg weak ptr %p, i64 %a, i64 %v acq_rel monotonic, align 8
  %c = extractvalue { i64, i1 } %b, 0
  %d = load atomic i64, ptr %p acquire, align 8
  store atomic i64 %d, ptr %p release, align 8
  fence syncscope("singlethread") seq_cst
  %e = atomicrmw volatile umin ptr %p, i64 %c monotonic, align 8
  %f = load atomic volatile i32, ptr %p monotonic, align 4
  %g = add i64 %e, %d
  ret i64 %g
}
