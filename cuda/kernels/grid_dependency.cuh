// SPDX-License-Identifier: Apache-2.0
// Programmatic dependent launch (sm_90 and newer): a kernel launched with
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION may start while the
// previous kernel of its stream is still draining. It must not read anything
// that kernel writes before wait_for_previous_grid(), which returns once the
// previous grid has finished and its memory is visible; it lets the next
// such kernel start early by calling let_next_grid_launch(). What a decode
// call gains is the launch latency and block start-up of the next kernel,
// hidden behind the tail of the one before (the reduce launch behind the
// main kernel, the next call behind the reduce). On older GPUs, and for a
// launch without the attribute, both are no-ops: plain stream order holds.
#pragma once

__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void let_next_grid_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
