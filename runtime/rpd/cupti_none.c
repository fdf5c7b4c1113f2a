/*
 * cupti_none.c: the CUPTI entry points of rpd_internal.h where libnano_rpd.so
 * is built without CUPTI's headers: CUDA programs are not traced.
 */
#include "rpd_internal.h"

int rpd_cupti_records_calls(void) { return 0; }
void rpd_cupti_own_graph_node(void *node) { (void)node; }
