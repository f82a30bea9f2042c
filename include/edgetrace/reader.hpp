// SPDX-License-Identifier: MIT
// The offline side in one include: streaming dump reader, clock model, Chrome JSON and info outputs.
#pragma once

#include "reader/chrome_json.hpp"
#include "reader/clock_model.hpp"
#include "reader/dump_reader.hpp"
#include "reader/info.hpp"
