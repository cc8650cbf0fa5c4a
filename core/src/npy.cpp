// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnscope/npy.h"
#include "attnscope/safetensors.h"
