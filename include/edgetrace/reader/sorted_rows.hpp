// SPDX-License-Identifier: MIT
// Forwards to detail/sorted_rows.hpp (csv's external sort, an internal helper); kept so existing includes work.
#pragma once

#include "detail/sorted_rows.hpp"
