// SPDX-License-Identifier: MIT
// The process-wide runtime, room by room along the data flow; nothing here runs on the hot path except push_slow.
//
// Each room includes only the rooms below it, so reading top to bottom is
// reading the data flow (docs/ARCHITECTURE.md, "The writer"):
//
//   platform/linux.hpp  the Linux calls: thread ids and names, futexes, /proc
//   registry.hpp        categories, mode bytes, interned names, unloaded ranges, flusher clients
//     capture_control   pause, windows, toggle signal: who holds recording back
//   encoding/           the pure chunk encoder (chunk_writer.hpp: definitions, annotations;
//                       ring_encoding.hpp: a ring's own encoding state; encoder.hpp;
//                       site_watch.hpp: the sites whose records go to the host)
//   flight/store.hpp, triggers.hpp, handoffs.hpp
//                       flight mode's data: the snapshot store, the latency triggers (a
//                       site_watch), the hand-offs between the app and the flusher
//   rings.hpp           ring mapping, the pool, the attached list
//   control.hpp         the flusher's control: futexes, open handshake, flush tickets, stop
//   output.hpp          the dump file
//     memory_room       how large a ring may be (cgroup, MemAvailable); cpu_load, the telemetry sampler
//   flight/service.hpp  the flight recorder as a service: its ring, schedule and hand-offs,
//                       the snapshots (it asks the runtime through flight_host)
//   stream.hpp          the runtime's state, output batching, one ring's drain
//   flusher.hpp         the flusher loop, the end of the stream; the_runtime
//   signals.hpp         SIGINT/SIGTERM hand-off, EDGETRACE_TOGGLE_SIGNAL, flight mode's
//                       snapshot signal and crash handlers
//   slow_path.hpp       thread attach, a full ring, push_slow
//   process.hpp         start from the environment, exit, fork
//     exit_priority     the final pass gets a CPU: the other threads at nice 19 meanwhile
//   api.hpp             the entry points the light headers declare
#pragma once

#include <edgetrace/writer/runtime_tu.hpp>

#include <edgetrace/writer/api.hpp>
