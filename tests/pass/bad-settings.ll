; A malformed setting is a compile error that names the variable (or option)
; and the value, and the module is left alone: no typo silently turns
; instrumentation into "every kind" or "nothing".
; RUN: env NANO_ATOMICS_KINDS=fetch_add,bogus %not %opt_nano -passes=nano-atomics -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=KINDS
; RUN: env NANO_ATOMICS_KINDS=, %not %opt_nano -passes=nano-atomics -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY
; RUN: env NANO_ATOMICS_FUNCTIONS='f(' %not %opt_nano -passes=nano-atomics -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REGEX
; RUN: %not %opt_nano -passes=nano-atomics -nano-atomics-exclude-files='[' -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTION
; Kind names with GCC's prefix, spaces and "none" are valid:
; RUN: env NANO_ATOMICS_KINDS=' __atomic_fetch_add , fence' %not %opt_nano -passes=nano-atomics -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FENCE
; RUN: env NANO_ATOMICS_KINDS=' __atomic_fetch_add , thread_fence' %opt_nano -passes=nano-atomics -S %s | FileCheck %s --check-prefix=BOTH
; RUN: env NANO_ATOMICS_KINDS=none %opt_nano -passes=nano-atomics -S %s | FileCheck %s --check-prefix=NONE
; An empty value is the default (as unset), said once per variable:
; RUN: env NANO_ATOMICS_KINDS= %opt_nano -passes=nano-atomics -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNSET

; KINDS: error: nanoprobe: NANO_ATOMICS_KINDS=fetch_add,bogus: unknown name 'bogus' (known: all none rmw fences load store {{.*}} signal_fence)
; EMPTY: error: nanoprobe: NANO_ATOMICS_KINDS=',': an empty list (name at least one, or unset it)
; REGEX: error: nanoprobe: NANO_ATOMICS_FUNCTIONS=f(: invalid regular expression ({{.+}})
; OPTION: error: nanoprobe: -nano-atomics-exclude-files=[: invalid regular expression ({{.+}})
; FENCE: unknown name 'fence'
; BOTH: @nano.sites = private global [2 x %struct.nano_site]
; NONE-NOT: nano.sites
; UNSET: warning: nanoprobe: NANO_ATOMICS_KINDS is set but empty: its default is used
; UNSET-NOT: set but empty

target triple = "x86_64-pc-linux-gnu"

define void @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  fence seq_cst
  ret void
}
