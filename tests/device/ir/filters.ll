; Filters: kernel regex, source scope, access kinds, address spaces, through
; the environment and -mllvm-style options; malformed values are errors that
; name the variable; a missing device runtime is an error naming where it was
; looked for. Site file and line come from the debug locations (the file
; joined to the compilation directory).
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=ALL
; RUN: env NANO_KERNELS='k_a.*' %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=KERN
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -nano-device-kernels='k_b' -S %s | FileCheck %s --check-prefix=KERNOPT
; The options' first names stay as aliases:
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -nano-kernels='k_b' -S %s | FileCheck %s --check-prefix=KERNOPT
; RUN: env NANO_SCOPE='src/kern.cu:15-25' %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=SCOPE
; RUN: env NANO_SCOPE='other.cu' %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=NOSCOPE
; RUN: env NANO_ACCESS=store %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=STORE
; RUN: env NANO_ADDRSPACES=generic %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=GENERIC
; RUN: env NANO_KERNELS='k_(' %not %opt -load-pass-plugin=%plugin -passes=nano-device -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADRE
; RUN: env NANO_SCOPE='kern.cu:9-3' %not %opt -load-pass-plugin=%plugin -passes=nano-device -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADSCOPE
; RUN: env NANO_ACCESS=' , ' %not %opt -load-pass-plugin=%plugin -passes=nano-device -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTYKIND
; RUN: env NANO_ACCESS='load,bogus' %not %opt -load-pass-plugin=%plugin -passes=nano-device -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADKIND
; RUN: env NANO_DEVICE_INLINE=yes %not %opt -load-pass-plugin=%plugin -passes=nano-device -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADINL
; RUN: env NANO_DEVICE_DIR=/nonexistent/dir %not %opt -load-pass-plugin=%plugin -passes=nano-device -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOBC
; RUN: %not %opt -load-pass-plugin=%plugin -passes=nano-device -nano-addrspaces=global,private -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADAS

target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @k_a(ptr addrspace(1) %p, ptr %q) !dbg !5 {
  %x = load i32, ptr addrspace(1) %p, align 4, !dbg !8
  store i32 %x, ptr %q, align 4, !dbg !9
  ret void
}

define amdgpu_kernel void @k_b(ptr addrspace(1) %p) {
  store i32 1, ptr addrspace(1) %p, align 4
  ret void
}

; ALL: @__nano_dh_sites_{{.*}}c"NANOSITE{{.*}}k_a\00/work/src/kern.cu\00k_b\00
; ALL-LABEL: define amdgpu_kernel void @__nano_twin_k_a(
; ALL: call void @__nano_dh_access({{.*}}, i32 4, i32 1), !dbg !{{[0-9]+}}
; ALL-NEXT: load
; ALL: call void @__nano_dh_access({{.*}}, i32 4, i32 0), !dbg !{{[0-9]+}}
; ALL-NEXT: store
; ALL-LABEL: define amdgpu_kernel void @__nano_twin_k_b(
; ALL: call void @__nano_dh_access(

; KERN: define amdgpu_kernel void @__nano_twin_k_a(
; KERN-NOT: @__nano_twin_k_b

; KERNOPT-NOT: @__nano_twin_k_a(
; KERNOPT: define amdgpu_kernel void @__nano_twin_k_b(

; SCOPE-LABEL: define amdgpu_kernel void @__nano_twin_k_a(
; SCOPE-NEXT: call void @__nano_dh_block_enter(
; SCOPE-NEXT: load
; SCOPE-NEXT: ptrtoint
; SCOPE-NEXT: call void @__nano_dh_access({{.*}}, i32 4, i32 0), !dbg !{{[0-9]+}}
; SCOPE-NEXT: store
; SCOPE-LABEL: define amdgpu_kernel void @__nano_twin_k_b(
; SCOPE-NEXT: call void @__nano_dh_block_enter(
; SCOPE-NEXT: store

; NOSCOPE-NOT: call void @__nano_dh_access(
; NOSCOPE: define amdgpu_kernel void @__nano_twin_k_b(
; NOSCOPE-NOT: call void @__nano_dh_access(

; STORE-LABEL: define amdgpu_kernel void @__nano_twin_k_a(
; STORE-NEXT: call void @__nano_dh_block_enter(
; STORE-NEXT: load
; STORE-NEXT: ptrtoint
; STORE-NEXT: call void @__nano_dh_access(

; GENERIC-LABEL: define amdgpu_kernel void @__nano_twin_k_a(
; GENERIC-NEXT: call void @__nano_dh_block_enter(
; GENERIC-NEXT: load
; GENERIC-NEXT: ptrtoint ptr %q
; GENERIC-NEXT: call void @__nano_dh_access(
; GENERIC-LABEL: define amdgpu_kernel void @__nano_twin_k_b(
; GENERIC-NEXT: call void @__nano_dh_block_enter(
; GENERIC-NEXT: store

; BADRE: error: nanoprobe: NANO_KERNELS=k_(: invalid regular expression
; BADSCOPE: error: nanoprobe: NANO_SCOPE: bad line range '9-3'
; EMPTYKIND: error: nanoprobe: NANO_ACCESS=' , ': an empty list
; BADKIND: error: nanoprobe: NANO_ACCESS=load,bogus: unknown name 'bogus' (known: load store atomic)
; BADINL: error: nanoprobe: NANO_DEVICE_INLINE=yes: expected 0 or 1
; NOBC: error: nanoprobe: device runtime nano_dh_amdgcn_gfx9.bc not found in /nonexistent/dir
; BADAS: error: nanoprobe: -nano-device-addrspaces=global,private: unknown name 'private'

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "test", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/kern.cu", directory: "/work")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "k_a", scope: !1, file: !1, line: 9, type: !6, scopeLine: 9, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 10, column: 3, scope: !5)
!9 = !DILocation(line: 20, column: 5, scope: !5)
