/*
 * standin_unsupported.c: the entry points of ROCr that Debian's real HIP
 * runtime (libamdhip64.so.5) imports and the stand-in (standin_hsa.cpp)
 * does not serve, so that the real runtime loads over it (case real_hip of
 * test_hsa.py). Each fails as ROCr does for a call it cannot serve
 * (HSA_STATUS_ERROR) and, with FAKE_HSA_DEBUG set, says so on stderr. The
 * real runtime tolerates every one of them on the paths the tests take
 * (the loader extension table at its start; images, IPC, interop, SVM and
 * registered memory never). Written without ROCr's prototypes: a caller's
 * arguments are ignored, and only the status is returned.
 */
#include <stdio.h>
#include <stdlib.h>

#define HSA_STATUS_ERROR 0x1000

#define UNSUPPORTED(name)                                                                          \
  __attribute__((visibility("default"))) int name(void) {                                        \
    if (getenv("FAKE_HSA_DEBUG"))                                                                  \
      fprintf(stderr, "stand-in HSA: " #name " is not served\n");                                 \
    return HSA_STATUS_ERROR;                                                                       \
  }

UNSUPPORTED(hsa_system_get_major_extension_table)
UNSUPPORTED(hsa_system_extension_supported)
UNSUPPORTED(hsa_agent_extension_supported)
UNSUPPORTED(hsa_executable_agent_global_variable_define)
UNSUPPORTED(hsa_memory_copy)
UNSUPPORTED(hsa_memory_register)
UNSUPPORTED(hsa_memory_deregister)
UNSUPPORTED(hsa_amd_coherency_set_type)
UNSUPPORTED(hsa_amd_pointer_info)
UNSUPPORTED(hsa_amd_queue_cu_set_mask)
UNSUPPORTED(hsa_amd_queue_set_priority)
UNSUPPORTED(hsa_amd_signal_value_pointer)
UNSUPPORTED(hsa_amd_ipc_memory_create)
UNSUPPORTED(hsa_amd_ipc_memory_attach)
UNSUPPORTED(hsa_amd_ipc_memory_detach)
UNSUPPORTED(hsa_amd_interop_map_buffer)
UNSUPPORTED(hsa_amd_interop_unmap_buffer)
UNSUPPORTED(hsa_amd_svm_attributes_get)
UNSUPPORTED(hsa_amd_svm_attributes_set)
UNSUPPORTED(hsa_amd_svm_prefetch_async)
UNSUPPORTED(hsa_amd_image_create)
UNSUPPORTED(hsa_ext_image_create)
UNSUPPORTED(hsa_ext_image_create_with_layout)
UNSUPPORTED(hsa_ext_image_data_get_info)
UNSUPPORTED(hsa_ext_image_destroy)
UNSUPPORTED(hsa_ext_image_export)
UNSUPPORTED(hsa_ext_image_import)
UNSUPPORTED(hsa_ext_sampler_create)
UNSUPPORTED(hsa_ext_sampler_destroy)
