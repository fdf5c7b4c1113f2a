#!/usr/bin/env python3
"""Writes the benchmark's HIP sources.
gen.py big N OUT   : one template kernel (loads, stores, atomics, LDS, a loop)
                     instantiated N times.
gen.py many N OUT  : N small extern "C" kernels (the listing benchmark)."""
import sys

kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(out, "w") as f:
    f.write("#include <hip/hip_runtime.h>\n")
    f.write("#define TID (__builtin_amdgcn_workitem_id_x())\n")
    if kind == "big":
        f.write("""
template <int K, typename T>
__global__ void work(T* a, const T* b, int* counter, int n) {
  __shared__ T tile[256];
  int i = TID;
  T acc = 0;
  for (int j = 0; j < n; j += 64) {
    tile[i] = b[i + j] * (T)K;
    __builtin_amdgcn_s_barrier();
    acc += tile[(i + K) & 255] + a[(i * K + j) % n];
  }
  a[i] = acc;
  __hip_atomic_fetch_add(counter + (K & 7), 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
""")
        types = ["float", "double", "int", "long long"]
        for k in range(n):
            t = types[k % len(types)]
            f.write("template __global__ void work<%d, %s>(%s*, const %s*, int*, int);\n" % (k, t, t, t))
    else:
        for k in range(n):
            f.write('extern "C" __global__ void kern_%05d(int* p) { p[TID] = %d; }\n' % (k, k))
