/*
 * no_zstd.c: preloaded before libzstd, makes every ZSTD_createCCtx fail, so
 * that the tracer's spill writes its rings as they are (spill.c's fallback
 * where no compressor can be made; test_rpd.py case spill_raw).
 */
#include <stddef.h>

void *ZSTD_createCCtx(void);

void *ZSTD_createCCtx(void) { return NULL; }
