// SPDX-License-Identifier: MIT
// The offline side in one include: streaming dump reader, clock model, and every output (JSON, Perfetto protobuf, info, summary, CSV, diff, merge, report).
//
// Layout (stable): reader internals live in include/edgetrace/reader/detail/,
// namespace edgetrace::reader::detail; nothing there is part of the surface.
//
// Error convention (the one convention of the reader and every sink):
// - an entry point that reads a dump or writes an output returns bool
//   (false = reading or writing failed) and, when given a non-null
//   `std::string* error`, stores one line there: no prefix, no newline;
// - damage inside a dump is not a failure: it is counted (dump_reader::damaged())
//   and reading goes on;
// - decoders return an enum (decode_status, chunk_read, ...), never bool;
// - no exceptions, no printing from library code.
#pragma once

#include "config.hpp"  // first: it stops a pre-C++17 build with one message
#include "reader/chrome_json.hpp"
#include "reader/clock_model.hpp"
#include "reader/csv.hpp"
#include "reader/diff.hpp"
#include "reader/dump_reader.hpp"
#include "reader/follow.hpp"
#include "reader/gpu_clock.hpp"
#include "reader/info.hpp"
#include "reader/latency.hpp"
#include "reader/merge.hpp"
#include "reader/perfetto.hpp"
#include "reader/protobuf_writer.hpp"
#include "reader/report.hpp"
#include "reader/snapshot.hpp"
#include "reader/span_walker.hpp"
#include "reader/summary.hpp"
#include "reader/top.hpp"
