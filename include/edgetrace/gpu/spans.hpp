// SPDX-License-Identifier: MIT
// GPU spans without CUDA headers: a GPU scope records its host span plus a
// pair of GPU events and hands them to the flusher through a per-thread
// lock-free queue; the flusher resolves them per stream, in FIFO order,
// into the dump's gpu chunks, with clock anchors that let the reader place
// GPU time on the host timeline. Every CUDA call goes through the
// gpu_backend table; cuda.hpp plugs in the CUDA runtime. Three rooms:
//   gpu_scope.hpp    the scope (app thread): events around the scope's work
//   gpu_handoff.hpp  the per-thread queue to the flusher, pairs coming back
//   gpu_tracker.hpp  the flusher client (and gpu_records.hpp, its encoder);
//                    inline here, or compiled once in the separate runtime
#pragma once

#include <edgetrace/config.hpp>
#include <edgetrace/face/site.hpp>
#include <edgetrace/format.hpp>
#include <edgetrace/gpu/backend.hpp>

#if EDGETRACE_ENABLED

#include <edgetrace/gpu/handoff.hpp>
#include <edgetrace/gpu/scope.hpp>
#if !EDGETRACE_SEPARATE_RUNTIME
#include <edgetrace/gpu/tracker.hpp>
#endif

#else  // EDGETRACE_ENABLED == 0: type-check, never evaluate, generate nothing.

#define EDGETRACE_DETAIL_GPU_SCOPE(cat, name, stream, backend)                                              \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_name(name))),   \
      static_cast<void>(sizeof(static_cast<void*>(stream))), static_cast<void>(sizeof(backend))
#define EDGETRACE_DETAIL_GPU_SCOPE_NAMED(cat, handle, stream, backend)                                          \
  EDGETRACE_DETAIL_CHECK_CATEGORY(cat), static_cast<void>(sizeof(::edgetrace::detail::check_handle(handle))),   \
      static_cast<void>(sizeof(static_cast<void*>(stream))), static_cast<void>(sizeof(backend))

#endif
