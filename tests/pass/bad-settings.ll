; An unknown kind or a malformed regex gets one warning naming the variable
; (or option), then the default: every kind, no filter.
; RUN: env NANO_ATOMICS_KINDS=fetch_add,bogus %opt_nano -passes=nano-atomics -S %s 2> %t.kinds.err | FileCheck %s --check-prefix=ALL
; RUN: FileCheck %s --check-prefix=KINDS < %t.kinds.err
; RUN: env NANO_ATOMICS_FUNCTIONS='f(' %opt_nano -passes=nano-atomics -S %s 2> %t.re.err | FileCheck %s --check-prefix=ALL
; RUN: FileCheck %s --check-prefix=REGEX < %t.re.err
; RUN: %opt_nano -passes=nano-atomics -nano-atomics-exclude-files='[' -S %s 2> %t.opt.err | FileCheck %s --check-prefix=ALL
; RUN: FileCheck %s --check-prefix=OPTION < %t.opt.err
; Once per process, however often the pass runs (no function matches, so
; the second run looks at the module, and the settings, again):
; RUN: env NANO_ATOMICS_KINDS=bogus NANO_ATOMICS_FUNCTIONS=nomatch %opt_nano -passes=nano-atomics,nano-atomics -S %s -o /dev/null 2>&1 | grep -c warning | FileCheck %s --check-prefix=ONCE

; ALL: @nano.sites = private global [2 x %struct.nano_site]
; KINDS: nanoprobe: warning: NANO_ATOMICS_KINDS: unknown kind 'bogus' (known: all none rmw fences load store {{.*}}); using the default (all)
; KINDS-NOT: warning
; REGEX: nanoprobe: warning: NANO_ATOMICS_FUNCTIONS: malformed regular expression 'f(' ({{.+}}); using the default (no filter)
; REGEX-NOT: warning
; OPTION: nanoprobe: warning: -nano-atomics-exclude-files: malformed regular expression '[' ({{.+}}); using the default (no filter)
; ONCE: {{^1$}}

target triple = "x86_64-pc-linux-gnu"

define void @f(ptr %p) {
  %a = atomicrmw add ptr %p, i32 1 monotonic, align 4
  fence seq_cst
  ret void
}
