/*
 * nano/gpu_launch.h: the contract between the plugin's host side of CUDA and
 * HIP compilations (llvm-pass/GpuLaunch.cpp) and the runtime that launches
 * kernel twins on GPUs (runtime/dispatch/gpu.c).
 *
 * The pass registers each selected kernel's twin next to the kernel, with the
 * API's own registration call (__cudaRegisterFunction / __hipRegisterFunction,
 * the same module handle, the twin's device name and a host handle of its
 * own), so the twin lives in the same loaded module as the kernel and sees
 * the application's __device__ variables. It then routes every launch of such
 * a kernel (cudaLaunchKernel / hipLaunchKernel or their per-thread-stream
 * variants with the kernel's host handle: <<<>>>, the launch API called
 * directly, hipLaunchKernelGGL; cudaLaunchKernelExC through
 * __nano_gpu_launch_ex) through __nano_gpu_launch when that symbol is
 * present (it is declared weak):
 *
 *   __nano_gpu_launch ? __nano_gpu_launch(api, cudaLaunchKernel, kernel, twin, "name",
 *                                         grid..., args, nargs, ...)
 *                     : cudaLaunchKernel(kernel, grid..., args, ...)   // as before
 *
 * The runtime decides per launch (the dispatch API's filters): the original
 * through `launch` with the same arguments, or the twin with args and one
 * more, a pointer to the dispatch's buffer descriptor. Its result is the
 * launch call's (cudaError_t or hipError_t).
 *
 * Each twin is also announced, right after its registration, where the
 * runtime is present:
 *
 *   __nano_gpu_register ? __nano_gpu_register(api, kernel, twin, "name", nargs)
 *
 * so a launch through a handle that is no constant (a kernel pointer held in
 * a variable or passed in) reaches __nano_gpu_launch with twin and name NULL
 * and nargs 0, and the runtime looks them up; a handle never announced (a
 * kernel of code not built with the plugin) is launched as it is.
 */
#ifndef NANO_GPU_LAUNCH_H
#define NANO_GPU_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which launch API the call came from (the low byte of the api argument). */
enum nano_gpu_api { NANO_GPU_CUDA = 1, NANO_GPU_HIP = 2 };
/* Or'ed into api: the call was the per-thread default stream's variant
 * (cudaLaunchKernel_ptsz, hipLaunchKernel_spt), so a NULL stream means the
 * thread's default stream, not the legacy one. */
#define NANO_GPU_PER_THREAD 0x100
#define NANO_GPU_API_MASK 0xff

/* cudaLaunchKernel and hipLaunchKernel as the x86-64 ABI passes them: each
 * dim3 in two registers, x and y in the first, z in the second. */
typedef int (*nano_gpu_launch_fn)(const void *kernel, uint64_t grid_xy, uint32_t grid_z,
                                  uint64_t block_xy, uint32_t block_z, void **args, size_t shared,
                                  void *stream);

/*
 * launch: the launch function the program called (its own copy: a static
 * cudart has no other); kernel, twin: the host handles the API knows the
 * kernel and its twin by (twin NULL: look it up); name: the kernel's device
 * (mangled) name (NULL with twin);
 * grid_xy, block_xy: x in the low 32 bits, y in the high ones; args: the
 * kernel's nargs argument pointers; shared: dynamic shared memory bytes;
 * stream: the API's stream (NULL: the default one).
 */
int __nano_gpu_launch(int api, nano_gpu_launch_fn launch, const void *kernel, const void *twin,
                      const char *name, uint64_t grid_xy, uint32_t grid_z, uint64_t block_xy,
                      uint32_t block_z, void **args, uint32_t nargs, size_t shared, void *stream);

/* cudaLaunchConfig_t (CUDA 11.8+), as the runtime reads it: grid and block
 * (dim3 each), dynamic shared memory bytes, the stream, and the launch
 * attributes (clusters, priorities, ...), passed on as they are. */
struct nano_gpu_launch_config {
  uint32_t grid[3], block[3];
  size_t shared;
  void *stream;
  void *attrs;
  uint32_t nattrs;
};

/* cudaLaunchKernelExC (and its _ptsz variant). */
typedef int (*nano_gpu_launch_ex_fn)(const struct nano_gpu_launch_config *config,
                                     const void *kernel, void **args);

/*
 * The launch of a kernel with a configuration (cudaLaunchKernelExC, which
 * cudaLaunchKernelEx's C++ templates call): as __nano_gpu_launch, the twin
 * launched through `launch` with the program's configuration (attributes
 * included) but for one more argument, or the original as it was called.
 */
int __nano_gpu_launch_ex(int api, nano_gpu_launch_ex_fn launch,
                         const struct nano_gpu_launch_config *config, const void *kernel,
                         const void *twin, const char *name, void **args, uint32_t nargs);

/* hipExtLaunchKernel's shape: a launch with events recorded around the
 * kernel (start, stop: NULL or the program's) and flags
 * (hipExtAnyOrderLaunch). */
typedef int (*nano_gpu_launch_events_fn)(const void *kernel, uint64_t grid_xy, uint32_t grid_z,
                                         uint64_t block_xy, uint32_t block_z, void **args,
                                         size_t shared, void *stream, void *start, void *stop,
                                         int flags);

/* As __nano_gpu_launch for a launch call of that shape: the twin launches
 * through the same call, the program's events and flags with it (the events
 * then time the twin). */
int __nano_gpu_launch_events(int api, nano_gpu_launch_events_fn launch, const void *kernel,
                             const void *twin, const char *name, uint64_t grid_xy, uint32_t grid_z,
                             uint64_t block_xy, uint32_t block_z, void **args, uint32_t nargs,
                             size_t shared, void *stream, void *start, void *stop, int flags);

/* One launch of a multi-device call (hipLaunchParams, and cudaLaunchParams
 * of CUDA before 13, which have this layout): the kernel's host handle,
 * grid, block, argument pointers, dynamic shared memory bytes, stream (its
 * device's). */
struct nano_gpu_launch_params {
  const void *func;
  uint32_t grid[3], block[3];
  void **args;
  size_t shared;
  void *stream;
};

/* hipLaunchCooperativeKernelMultiDevice, hipExtLaunchMultiKernelMultiDevice,
 * cudaLaunchCooperativeKernelMultiDevice: n launches, one per device. */
typedef int (*nano_gpu_launch_multi_fn)(struct nano_gpu_launch_params *list, int n, unsigned flags);

/* As __nano_gpu_launch for a multi-device call: each launch whose kernel was
 * announced (__nano_gpu_register) and which the runtime instruments gets its
 * twin and a dispatch of its own; all launch through one call of `launch`
 * (a cooperative call stays one cooperative launch), with the program's
 * list untouched; where that fails, the program's list as it was. */
int __nano_gpu_launch_multi(int api, nano_gpu_launch_multi_fn launch,
                            struct nano_gpu_launch_params *list, int n, unsigned flags);

/* kernel, twin: host handles; name: the kernel's device name; nargs: its
 * parameter count. Registers the pair for launches through a non-constant
 * handle. */
void __nano_gpu_register(int api, const void *kernel, const void *twin, const char *name,
                         uint32_t nargs);

/* The twin's host handle of a kernel handle some module announced, or NULL:
 * the plugin mirrors a configuration call (cudaFuncSetAttribute, ...) whose
 * handle is no constant to the twin through it. */
const void *__nano_gpu_twin_of(int api, const void *kernel);

/* The program's own cudaGetLastError, cudaPeekAtLastError and
 * cudaGetErrorName (HIP's), from the constructor of each module that
 * registers twins: the runtime takes a failed twin launch's error out of the
 * program's last error and names it. */
void __nano_gpu_api(int api, int (*get_last_error)(void), int (*peek_at_last_error)(void),
                    const char *(*error_name)(int));

/* The program's graph node calls (CUDA 12.3+: cudaGraphAddNode, _v2;
 * the driver's cuGraphAddNode, _v2; HIP 6.2's hipGraphAddNode), through __nano_gpu_graph_add_node:
 * the call itself, its parameters passed on as they are (edges: the
 * dependency edges' data where the call takes them, else ignored; add: the
 * call, of the shape with_edges says), and a conditional node's body graphs
 * remembered. A body graph may hold no host function (CUDA's rule for
 * conditional bodies), which a twin's dispatch in a graph needs: a launch
 * captured into one (cudaStreamBeginCaptureToGraph) runs the original
 * kernel there, said once. A kernel node with a twin, while instrumenting
 * and with no edge data, goes in as __nano_gpu_graph_add_kernel's do
 * (launch: the program's cudaLaunchKernel; NULL for the driver's calls,
 * whose kernels have no twins of the plugin's). */
typedef int (*nano_gpu_add_node_fn)(void **node, void *graph, const void *deps, size_t ndeps,
                                    void *params);
typedef int (*nano_gpu_add_node_edges_fn)(void **node, void *graph, const void *deps,
                                          const void *edges, size_t ndeps, void *params);
int __nano_gpu_graph_add_node(int api, void *add, nano_gpu_launch_fn launch, int with_edges,
                              void **node, void *graph, const void *deps, const void *edges,
                              size_t ndeps, void *params);

/* The program's cudaGraphAddKernelNode (hipGraphAddKernelNode), through
 * __nano_gpu_graph_add_kernel with the program's cudaLaunchKernel
 * (hipLaunchKernel) as launch: a kernel with a twin, while
 * instrumenting, goes into the graph as one child graph node whose graph
 * holds the twin's nodes as a launch captured into a graph makes them (each
 * replay a dispatch of its own); *node is that child graph node. Anything
 * else (no twin, arguments in `extra`, a conditional node's body, a capture
 * that fails: said once) is added by the program's call as it is. */
typedef int (*nano_gpu_add_kernel_node_fn)(void **node, void *graph, const void *deps, size_t ndeps,
                                           const void *params);
int __nano_gpu_graph_add_kernel(int api, nano_gpu_add_kernel_node_fn add, nano_gpu_launch_fn launch,
                                void **node, void *graph, const void *deps, size_t ndeps,
                                const void *params);

/* The program's kernel node parameter calls, through
 * __nano_gpu_graph_kernel_params (op: which call is `call`): on a node of
 * __nano_gpu_graph_add_kernel's they act on the twin's node inside it (get:
 * the program's kernel shown, not the twin; set: the twin with the new
 * arguments and shape; exec set: the same on a copy of the child graph, given
 * to the executable's node: cudaGraphExecChildGraphNodeSetParams; set is the
 * program's cudaGraphKernelNodeSetParams for that copy); another kernel or
 * arguments in `extra` run as they are, uninstrumented from then on, said.
 * Other nodes: the call as it is. */
#define NANO_GPU_NODE_GET 0      /* cudaGraphKernelNodeGetParams(node, params) */
#define NANO_GPU_NODE_SET 1      /* cudaGraphKernelNodeSetParams(node, params) */
#define NANO_GPU_NODE_EXEC_SET 2 /* cudaGraphExecKernelNodeSetParams(exec, node, params) */
/* the generic calls with a kernel node's cudaGraphNodeParams (others pass) */
#define NANO_GPU_NODE_GENERIC_SET 3      /* cudaGraphNodeSetParams(node, params) */
#define NANO_GPU_NODE_GENERIC_EXEC_SET 4 /* cudaGraphExecNodeSetParams(exec, node, params) */
typedef int (*nano_gpu_node_params_fn)(void *node, void *params);
typedef int (*nano_gpu_exec_node_params_fn)(void *exec, void *node, void *params);
int __nano_gpu_graph_kernel_params(int api, int op, void *call, nano_gpu_node_params_fn set,
                                   void *exec, void *node, void *params);

/* The node the program's other kernel node calls (cudaGraphKernelNode
 * Set/GetAttribute, CopyAttributes; HIP's) act on: the twin's kernel node
 * inside a node of __nano_gpu_graph_add_kernel's, else node itself. */
void *__nano_gpu_graph_kernel_node(int api, void *node);

#ifdef __cplusplus
}
#endif
#endif /* NANO_GPU_LAUNCH_H */
