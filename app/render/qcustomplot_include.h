// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// QCustomPlot 2.1's header says `signals:` and `foreach`, which QT_NO_KEYWORDS removes. Only .cpp
// files include this wrapper (headers forward-declare QCustomPlot), so the macros stay local.
#define signals Q_SIGNALS
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef foreach
