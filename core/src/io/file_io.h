// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The file access helpers are public (the CLI and the exporter write through OutputFile too);
// this header stays so the core's own includes need not change.
#include "attnscope/file_io.h"
