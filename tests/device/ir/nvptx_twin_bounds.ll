; A kernel without launch bounds may be launched with 1024 threads per block;
; its twin needs more registers, so the twin gets the bound (maxntid 1024:
; ptxas then caps registers at 64 and spills). A kernel's own maxntid or
; reqntid stays the twin's, and no second bound is added. LLVM 15 keeps
; bounds in nvvm.annotations, LLVM 22 as function attributes (upgraded from
; the annotations when the file is read).
; RUN: %opt -load-pass-plugin=%plugin -passes=nano-device -S %s | FileCheck %s --check-prefix=V%major

target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @free(ptr %p) {
  store i32 0, ptr %p, align 4
  ret void
}

define void @bounded(ptr %p) {
  store i32 1, ptr %p, align 4
  ret void
}

define void @exact(ptr %p) {
  store i32 2, ptr %p, align 4
  ret void
}

!nvvm.annotations = !{!0, !1, !2, !3, !4, !5}
!0 = !{ptr @free, !"kernel", i32 1}
!1 = !{ptr @bounded, !"kernel", i32 1}
!2 = !{ptr @bounded, !"maxntidx", i32 256}
!3 = !{ptr @exact, !"kernel", i32 1}
!4 = !{ptr @exact, !"reqntidx", i32 128}
!5 = !{ptr @exact, !"reqntidy", i32 2}

; V15-DAG: !{ptr @__nano_twin_free, !"maxntidx", i32 1024}
; V15-DAG: !{ptr @__nano_twin_bounded, !"maxntidx", i32 256}
; V15-DAG: !{ptr @__nano_twin_exact, !"reqntidx", i32 128}
; V15-NOT: !{ptr @free, !"maxntidx"
; V15-NOT: !{ptr @__nano_twin_bounded, !"maxntidx", i32 1024}
; V15-NOT: !{ptr @__nano_twin_exact, !"maxntidx"

; V22: define ptx_kernel void @free(ptr %p) {
; V22: define ptx_kernel void @bounded(ptr %p) #[[B:[0-9]+]] {
; V22: define ptx_kernel void @exact(ptr %p) #[[E:[0-9]+]] {
; V22: define ptx_kernel void @__nano_twin_free(ptr %p, ptr addrspace(1) %nano_dh_desc) #[[TF:[0-9]+]] {
; V22: define ptx_kernel void @__nano_twin_bounded(ptr %p, ptr addrspace(1) %nano_dh_desc) #[[TB:[0-9]+]] {
; V22: define ptx_kernel void @__nano_twin_exact(ptr %p, ptr addrspace(1) %nano_dh_desc) #[[TE:[0-9]+]] {
; V22-DAG: attributes #[[B]] = { "nvvm.maxntid"="256" }
; V22-DAG: attributes #[[E]] = { "nvvm.reqntid"="128,2" }
; V22-DAG: attributes #[[TF]] = { "nano.twin" "nvvm.maxntid"="1024" }
; V22-DAG: attributes #[[TB]] = { "nano.twin" "nvvm.maxntid"="256" }
; V22-DAG: attributes #[[TE]] = { "nano.twin" "nvvm.reqntid"="128,2" }
