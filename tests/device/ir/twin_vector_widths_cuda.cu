// NVPTX twins keep the original's access widths (clang-22, sm_90): SROA splits
// a float4 or a packed 128-bit struct into four 4-byte accesses; the backend's
// load/store vectorizer merges them back into ld/st.global.v4 in the original.
// In the twin the pass instruments such an aligned run of adjacent accesses
// as one 16-byte site with one call before it, so the run stays adjacent, the
// twin's PTX has the same v4 accesses and its records say 16 bytes. Accesses
// the backend does not merge (halves: alignment 4) stay 4-byte sites, as in
// the original's scalar PTX.
// REQUIRES: cuda
// RUN: %clang_nano -x cuda --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -S %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %clang_nano -x cuda --cuda-path=/usr/local/cuda --cuda-gpu-arch=sm_90 --cuda-device-only -Wno-unknown-cuda-version -O2 -S -emit-llvm %s -o %t.ll
// RUN: FileCheck %s --check-prefix=IR < %t.ll
#include <cuda_fp16.h>

struct __align__(16) Packed { int a, b, c, d; };
struct __align__(16) Halves { __half2 h[4]; };

__global__ void f4(const float4 *in, float4 *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = in[i];
    v.x *= 2; v.y *= 3; v.z *= 4; v.w *= 5;
    out[i] = v;
  }
}
__global__ void packed(const Packed *in, Packed *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    Packed p = in[i];
    p.a += 1; p.b += 2; p.c += 3; p.d += 4;
    out[i] = p;
  }
}
__global__ void halves(const Halves *in, Halves *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    Halves v = in[i];
    for (int k = 0; k < 4; k++) v.h[k] = __hmul2(v.h[k], v.h[k]);
    out[i] = v;
  }
}

// The originals, then the twins: the same global accesses.
// PTX-LABEL: .entry _Z2f4PK6float4PS_i(
// PTX-NOT: .entry
// PTX: ld.global.v4.b32
// PTX-NOT: .entry
// PTX: st.global.v4.b32
// PTX-LABEL: .entry _Z6packedPK6PackedPS_i(
// PTX-NOT: .entry
// PTX: ld.global.v4.b32
// PTX-NOT: .entry
// PTX: st.global.v4.b32
// PTX-LABEL: .entry _Z6halvesPK6HalvesPS_i(
// PTX-COUNT-4: ld.global.b32
// PTX-COUNT-4: st.global.b32
// PTX-LABEL: .entry __nano_twin__Z2f4PK6float4PS_iPv(
// PTX-NOT: ld.global.b32
// PTX: ld.global.v4.b32
// PTX-NOT: st.global.b32
// PTX: st.global.v4.b32
// PTX-LABEL: .entry __nano_twin__Z6packedPK6PackedPS_iPv(
// PTX-NOT: ld.global.b32
// PTX: ld.global.v4.b32
// PTX-NOT: st.global.b32
// PTX: st.global.v4.b32
// PTX-LABEL: .entry __nano_twin__Z6halvesPK6HalvesPS_iPv(
// PTX-COUNT-4: ld.global.b32
// PTX-COUNT-4: st.global.b32

// One 16-byte site per merged run (load, then store), four 4-byte ones where
// nothing merges.
// IR-LABEL: define {{.*}} @__nano_twin__Z2f4PK6float4PS_iPv(
// IR-COUNT-2: call void @__nano_dh_access({{.*}}, i32 16, i32 0)
// IR-NOT: call void @__nano_dh_access(
// IR-LABEL: define {{.*}} @__nano_twin__Z6packedPK6PackedPS_iPv(
// IR-COUNT-2: call void @__nano_dh_access({{.*}}, i32 16, i32 0)
// IR-NOT: call void @__nano_dh_access(
// IR-LABEL: define {{.*}} @__nano_twin__Z6halvesPK6HalvesPS_iPv(
// IR-COUNT-8: call void @__nano_dh_access({{.*}}, i32 4, i32 0)
// IR-NOT: call void @__nano_dh_access(
// IR-LABEL: define internal void @__nano_dh_access(
