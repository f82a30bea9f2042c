// SPDX-License-Identifier: MIT
// The offline side in one include: streaming dump reader, clock model, and every output (JSON, Perfetto protobuf, info, summary, CSV, diff, merge, report).
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
