// SPDX-License-Identifier: MIT
// The edgetrace::reader library: the dump reader's passes compiled once,
// for programs whose TUs read dumps with EDGETRACE_SEPARATE_READER=1 (the
// target sets it for its users).
#define EDGETRACE_DETAIL_READER_TU 1
#include <edgetrace/decode/dump_reader.hpp>
