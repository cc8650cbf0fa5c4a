// SPDX-License-Identifier: GPL-3.0-or-later
// The .attnscope reader (SessionFile::fromJson) on arbitrary bytes: it accepts a session or
// returns false with a message, never throws or crashes, and whatever it accepts survives a
// round trip through toJson unchanged.
#include <QByteArray>
#include <QString>

#include <cstddef>
#include <cstdint>

#include "fuzz_check.h"
#include "model_spec_equal.h"
#include "session_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnscope;
  using gui::Session;
  using gui::SessionFile;
  const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  Session session;
  QString error;
  if (!SessionFile::fromJson(bytes, &session, &error)) {
    if (error.isEmpty()) fuzz::fail("rejected without a message");
    return 0;
  }
  Session again;
  if (!SessionFile::fromJson(SessionFile::toJson(session), &again, &error)) {
    fuzz::fail("toJson wrote a session fromJson rejects: " + error.toStdString());
  }
  if (again.text != session.text || again.model.source != session.model.source ||
      !gui::sameToyConfig(again.model.toy, session.model.toy) || again.run != session.run ||
      again.view != session.view || again.currentView != session.currentView) {
    fuzz::fail("a session changed in a round trip through toJson");
  }
  return 0;
}
