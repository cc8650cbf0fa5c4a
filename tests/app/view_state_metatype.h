// SPDX-License-Identifier: GPL-3.0-or-later
// ViewState in a QVariant, for QSignalSpy on the views' viewStateChanged: declared once here, as
// the view tests share one executable and one unity unit (qtest_main.h).
#pragma once

#include <QMetaType>

#include "view_state.h"

Q_DECLARE_METATYPE(attnscope::render::ViewState)
