/*
 * nvtx_app.c: an application instrumented with header-only NVTX 3, never
 * linked against nanoprobe. Recorded by NVTX_INJECTION64_PATH=libnano_rpd.so.
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  nvtxNameOsThreadA((uint32_t)gettid(), "nvtx-main-thread");
  int l0 = nvtxRangePushA("nvtx-outer");
  nvtxMarkA("nvtx-mark");
  int l1 = nvtxRangePushW(L"nvtx-wide");
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangeId_t id = nvtxRangeStartA("nvtx-startend");
  nvtxRangeEnd(id);

  nvtxDomainHandle_t dom = nvtxDomainCreateA("mydomain");
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "nvtx-domain-range";
  nvtxDomainRangePushEx(dom, &a);
  nvtxDomainRangePop(dom);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(dom, "nvtx-registered");
  nvtxDomainMarkEx(dom, &a);
  /* PyTorch emit_nvtx style text */
  nvtxRangePushA("aten::add, seq = 7, op_id = 3, sizes = [[2, 3], [2, 3]], input_op_ids = [1, 2]");
  nvtxRangePop();
  printf("levels %d %d\n", l0, l1);
  return 0;
}
