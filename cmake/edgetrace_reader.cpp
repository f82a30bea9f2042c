// SPDX-License-Identifier: MIT
// The edgetrace::reader library: the dump reader and every output compiled
// once, for programs whose TUs read dumps with EDGETRACE_SEPARATE_READER=1
// (the target sets it for its users; they see declarations only).
#define EDGETRACE_DETAIL_READER_TU 1
#include <edgetrace/reader.hpp>
