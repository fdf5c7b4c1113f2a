// subscriber.cu: the program holds CUPTI before nanoprobe's tracer starts, as
// Nsight Systems or the PyTorch profiler would: the tracer says so, naming
// the subscriber CUPTI names, and the rest still works: the twin runs and is
// reported, and the program's own subscriber sees its runtime calls.
#include <cupti.h>

#include "common.h"

static int runtime_calls; // seen by the program's own CUPTI subscriber

static void CUPTIAPI count_call(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *data) {
  if (static_cast<const CUpti_CallbackData *>(data)->callbackSite == CUPTI_API_ENTER)
    runtime_calls++;
}

static void check_cupti(CUptiResult r, const char *what) {
  if (r == CUPTI_SUCCESS)
    return;
  const char *why = "?";
  cuptiGetResultString(r, &why);
  std::printf("subscriber: %s failed: %s\n", what, why);
  std::exit(3);
}

__global__ void twice(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

int main() {
  // before the program's first CUDA call, so before the driver starts the
  // tracer (CUDA_INJECTION64_PATH, which its LD_PRELOAD sets)
  CUpti_SubscriberHandle sub;
  CUpti_SubscriberParams params = {};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "subscriber sample";
  check_cupti(cuptiSubscribe_v2(&sub, count_call, nullptr, &params), "cuptiSubscribe_v2");
  check_cupti(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain");
  Doubling d = doubling_setup(1 << 16);
  twice<<<d.n / 256, 256>>>(d.in, d.out, d.n);
  int wrong = doubling_wrong(d);
  check_cupti(cuptiUnsubscribe(sub), "cuptiUnsubscribe");
  std::printf("subscriber %s\n", wrong ? "WRONG" : "ok");
  std::printf("runtime calls seen by the program's subscriber: %d\n", runtime_calls);
  return wrong != 0;
}
