/*
 * rpd_internal.h: what the parts of libnano_rpd.so share (not installed).
 *
 *   tracer.h   the tracer core: rpd.c, clock.c, intern.c, producer.c, writer.c, writer_rows.c,
 *              writer_queue.c, calls.c (buffers, writer thread, control, user
 *              ranges, recording API; tracer.h lists them)
 *   roctx.c    roctx entry points over the range functions below
 *   nvtx.c     the NVTX 3 injection (InitializeInjectionNvtx2)
 *   stack.c    stack capture (libunwind) and symbolisation (elfutils libdwfl)
 *   spill.c    the overflow store's file (filled rings past the memory bound)
 *   atomics.c  the atomics tracker's sites and counts into nano_ tables
 *   ../dispatch/  instrumented kernel dispatches (posts writer jobs)
 */
#ifndef NANO_RPD_INTERNAL_H
#define NANO_RPD_INTERNAL_H

#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "rpd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One line on stderr: prefix, then the message (rpd.c; rpd_log's). */
void rpdi_logv(const char *prefix, const char *fmt, va_list ap);
/* rocpd_copyapi of API call api from a runtime's copy arguments (CUPTI's,
 * HIP's): pointers and the stream as "%p" text, the numbers of c (its
 * strings are not read); c->sync: a synchronous copy, which has no stream
 * (producer.c). */
void rpdi_copy_args(uint64_t api, const void *dst, const void *src, const void *stream,
                    const struct rpd_copy *c);

#define RPDI_EXPORT __attribute__((visibility("default")))

/* Gives the calling thread an alternate signal stack where it has none, so
 * the tracer's handler runs after a stack overflow (rpd.c; threads that record
 * and the CPU back end's workers take one); rpd_altstack_drop takes it back at
 * the thread's exit. */
void rpd_altstack_take(void);
void rpd_altstack_drop(void);

/* Range push on the calling thread with text `text` in domain `domain`
 * (NULL: "UserMarker"); `name`/`args` follow rpd_rangePush. Returns the
 * 0-based nesting level of the new range. */
int rpdi_push(const char *domain, const char *name, const char *args);
/* Pops the innermost range; returns its 0-based level, or -1 when none. */
int rpdi_pop(void);
/* A process-wide range that may end on another thread; returns its id
 * (never 0). */
uint64_t rpdi_range_start(const char *domain, const char *text);
/* An API row's handle taken before the call ends (rows that refer to the
 * call, such as the ops of driver calls made inside it, can then be linked
 * as they come); rpdi_record_api_as records the call under it. */
uint64_t rpdi_api_handle(void);
/* rpd_record_api under handle h (0: a new one). Returns the handle, 0 when
 * nothing was recorded. */
uint64_t rpdi_record_api_as(uint64_t h, const char *domain, const char *category,
                            const char *apiName, const char *args, int64_t start, int64_t end);
/* Ends a range of rpdi_range_start (unknown ids are ignored). */
void rpdi_range_stop(uint64_t id);

/* The string of an rpd_intern handle (NULL for 0 or an unknown handle). */
const char *rpdi_intern_str(uint32_t handle);

/* ---- stack frames (stack.c) ---------------------------------------------- */

/* (Stacks are captured with nano_backtrace, nano/backtrace.h.) */

/* What the symboliser knows of a return address; NULL fields are unknown.
 * The strings belong to the symboliser and live until rpdi_stack_reset. */
struct rpdi_frame {
  const char *function; /* ELF symbol (mangled for C++)      */
  uint64_t offset;      /* of the call within function        */
  const char *file;     /* source file of the call            */
  int line;
  const char *module; /* the object's path                  */
};
/* Fills *f for return address ip (the call before it). Returns 0, or -1
 * when no module holds ip (f is then all NULL). Writer thread only. */
int rpdi_stack_frame(uint64_t ip, struct rpdi_frame *f);
/* Writes "function+0xoff at file:line" (or the best available form) for ip
 * into buf. Called by the writer thread only. */
void rpdi_stack_symbolize(uint64_t ip, char *buf, size_t n);
/* Drops the writer's symboliser state (after fork, at shutdown). */
void rpdi_stack_reset(void);

/* ---- the spill file (spill.c) --------------------------------------------- */

struct iovec;
/* The largest bound NANO_RPD_OVERFLOW_MEMORY/_FILE take (1 PiB: none). */
#define RPDI_MAX_OVERFLOW_BYTES (1ull << 50)
/* Reads NANO_RPD_OVERFLOW_FILE (the bound of live bytes; 0: no file). */
void rpdi_spill_init(void);
/* The file of the next spill goes in NANO_RPD_OVERFLOW_DIR, else the folder
 * of the trace at `trace_path`; a failure said before is forgotten. */
void rpdi_spill_configure(const char *trace_path);
/* A region of the file: where, the bytes it takes there, the bytes of the
 * parts it holds and how many, whether it holds them packed (the slots
 * delta-coded, then one zstd frame per part) or as they are, and, packed,
 * the bytes of the slots' code where it is stored as it is (0: a frame). */
struct rpdi_spill_region {
  int64_t off;
  uint64_t stored, bytes;
  int parts, packed;
  uint32_t code;
};
/* A producer's compressor (made at its first spill, kept for the thread's
 * buffer: one thread uses it at a time). */
struct rpdi_spill_z;
/* Writes the n (at most 4) parts as one region, part 0 a ring's slots
 * (struct nano_rpd_rec), packed with *z (made here when NULL; where it
 * cannot be, the parts go as they are), into *out.
 * Returns 0, or -1 when the bound leaves no room or the file cannot be made
 * or written (said once; later calls then return -1 at once). Thread-safe
 * for distinct z. */
int rpdi_spill_write(struct rpdi_spill_z **z, const struct iovec *iov, int n,
                     struct rpdi_spill_region *out);
/* Reads region r back into the first of the n parts it holds (the writer's
 * thread only: its decompressor is one); the others are left as they are.
 * Returns 0, or -1 (said). */
int rpdi_spill_read(const struct rpdi_spill_region *r, const struct iovec *iov, int n);
/* Region r is no longer needed. Thread-safe. */
void rpdi_spill_release(const struct rpdi_spill_region *r);
/* Closes the file (nothing may be live); gives the most bytes of records it
 * held at once and the most bytes the file took. */
void rpdi_spill_close(uint64_t *peak_records, uint64_t *peak_file);
/* The folder of the file (for messages). */
const char *rpdi_spill_dir(void);
void rpdi_spill_atfork_prepare(void);
void rpdi_spill_atfork_parent(void);
void rpdi_spill_atfork_child(void);

/* ---- jobs for the writer (the dispatch layer's results) ------------------- */

/* What a job does on the writer's connection, inside its transaction:
 * offset is the session's id offset, path the trace's (for messages).
 * Returns 0, or -1 after saying what failed on stderr. */
typedef int (*rpdi_job_fn)(sqlite3 *db, int64_t offset, const char *path, void *data);

/*
 * Queues a job for the writer thread, which runs `schema` (CREATE ... IF NOT
 * EXISTS statements, static storage) once per connection before the first
 * job that names it, then write(db, offset, path, data), then dtor(data).
 * Jobs run in the order they were posted, at the writer's next wake-up
 * (which this asks for) and at every flush, stop and exit. Returns 0, or -1
 * when no trace is being written (dtor(data) has then run already).
 */
int rpdi_post(const char *schema, rpdi_job_fn write, void (*dtor)(void *), void *data);

/* Records (tag, value) as a rocpd_metadata row of the trace being written,
 * through a job (rpdi_post): 0, or -1 when there is none or no memory. */
int rpdi_metadata(const char *tag, const char *value);

/* ---- atomics (atomics.c) -------------------------------------------------- */

/* Creates the nano_atomic_* tables and view if missing and writes this
 * session's sites and their current counts (replacing earlier counts).
 * Called by the writer thread inside its transaction. Returns 0, or -1 with
 * a message on stderr. */
int rpdi_atomics_write(sqlite3 *db, const char *path, int64_t offset);

/* Stores a sample of this process's totals per kind at time `now` (the
 * trace's clock) into nano_atomic_sample: the kinds whose total changed since
 * the last sample of this session. Called by the writer thread inside its
 * transaction. Returns 0, or -1 with a message on stderr. */
int rpdi_atomics_sample(sqlite3 *db, const char *path, int64_t offset, int64_t now);

/* Recording starts (on = 1) or stops (0): the counts written are those made
 * while recording (atomics.c, "Windows"). Under the tracer's control lock. */
void rpdi_atomics_window(int on);

/* ---- components ------------------------------------------------------------
 * The core (tracer.h's parts) knows the components of libnano_rpd.so (CUPTI,
 * the dispatch layer) only by what they register, from a constructor of
 * their own that runs before the core's (RPDI_REGISTER_*: constructor
 * priorities, which also order them): their load hook after the core has
 * read its settings, their exit hook at exit before the writer stops (their
 * last records go into the trace), in that order. A component calls the
 * core (rpdi_post, rpd_record_*), never the other way. */
struct rpdi_component {
  const char *name;
  void (*load)(void); /* NULL: nothing at load */
  void (*exit)(void); /* NULL: nothing at exit */
  /* A fatal signal, from the tracer's handler: says on stderr, async-signal-
   * safely (rpdi_say, rpdi_dec), what the component knows of it. NULL:
   * nothing. */
  void (*fault)(int sig, const siginfo_t *info);
};
enum {
  RPDI_REGISTER_CUPTI = 201,
  RPDI_REGISTER_DISPATCH = 202,
  RPDI_REGISTER_CPU = 203,
  RPDI_REGISTER_HSA = 204
};
void rpdi_component_register(const struct rpdi_component *c);
/* The file of the loaded object that holds `code` (a function of it),
 * resolved (realpath), into path (PATH_MAX bytes): for this library's own,
 * what a runtime's tool variable (CUDA_INJECTION64_PATH, HSA_TOOLS_LIB)
 * names to load it; for a runtime's function, the runtime's file. 0, or -1
 * (errno) where it is unknown. */
int rpdi_object_path(const void *code, char *path);
/* s to stderr; v in decimal into buf (24 bytes), returning where it starts.
 * Both async-signal-safe (rpd.c). */
void rpdi_say(const char *s);
const char *rpdi_dec(uint64_t v, char buf[24]);

/* Nonzero while the calling thread makes nanoprobe's own GPU API calls (the
 * GPU back end's copies, events, host functions; gpu.c): the API tracers
 * (CUPTI's callbacks, HIP's) record neither them nor the work they issue. */
extern __thread int rpd_gpu_quiet;

/* ---- CUDA through CUPTI (cupti.c; absent without CUPTI's headers) -------- */

/* Nonzero once CUPTI records the program's CUDA runtime calls, whose launch
 * rows then carry the launches' rocpd_kernelapi rows (the GPU back end's
 * own launch rows leave theirs out: one per launch). */
int rpd_cupti_records_calls(void);
/* The GPU back end's own node (a copy) in a graph being captured: its runs
 * at every replay, and those of the nodes instantiation clones from it, are
 * left out of the trace (CUPTI attributes them to the program's graph
 * launch). */
void rpd_cupti_own_graph_node(void *node);

#ifdef __cplusplus
}
#endif

#endif /* NANO_RPD_INTERNAL_H */
