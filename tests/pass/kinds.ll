; Kind selection: NANO_ATOMICS_KINDS or -nano-atomics-kinds (which wins)
; takes kind names with or without __atomic_, and the groups all, none, rmw
; (exchange and every fetch_*) and fences.
; RUN: env NANO_ATOMICS_KINDS=fetch_add,__atomic_load %opt_nano -passes=nano-atomics -S %s | FileCheck %s --check-prefix=ADDLOAD
; RUN: env NANO_ATOMICS_KINDS=rmw %opt_nano -passes=nano-atomics -S %s | FileCheck %s --check-prefix=RMW
; RUN: env NANO_ATOMICS_KINDS=fences %opt_nano -passes=nano-atomics -S %s | FileCheck %s --check-prefix=FENCES
; RUN: env NANO_ATOMICS_KINDS=none %opt_nano -passes=nano-atomics -S %s | FileCheck %s --check-prefix=NONE
; RUN: env NANO_ATOMICS_KINDS=none %opt_nano -passes=nano-atomics -nano-atomics-kinds=compare_exchange -S %s | FileCheck %s --check-prefix=CAS
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-kinds=all -S %s | FileCheck %s --check-prefix=ALL

target triple = "x86_64-pc-linux-gnu"

; ADDLOAD: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, {{.*}} }, %struct.nano_site { i32 0, i16 0,
; RMW: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, {{.*}} }, %struct.nano_site { i32 0, i16 2,
; FENCES: @nano.sites = private global [1 x %struct.nano_site] [%struct.nano_site { i32 0, i16 26,
; NONE-NOT: {{@(__)?nano}}
; CAS: @nano.sites = private global [1 x %struct.nano_site] [%struct.nano_site { i32 0, i16 3,
; ALL: @nano.sites = private global [5 x %struct.nano_site]

define void @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  %b = load atomic i32, ptr %p acquire, align 4
  %c = atomicrmw xchg ptr %p, i32 1 monotonic, align 4
  %d = cmpxchg ptr %p, i32 0, i32 1 seq_cst seq_cst, align 4
  fence seq_cst
  ret void
}
