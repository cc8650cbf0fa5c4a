// SPDX-License-Identifier: GPL-3.0-or-later
#include "view_state.h"

#include <array>
#include <utility>

namespace attnscope::render {
namespace {

const std::array<std::pair<ViewKind, const char*>, 5> kNames = {{
    {ViewKind::Heatmap, "heatmap"},
    {ViewKind::Grid, "grid"},
    {ViewKind::Compare, "compare"},
    {ViewKind::Stats, "stats"},
    {ViewKind::Pipeline, "pipeline"},
}};

}  // namespace

QString toString(ViewKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return QString::fromLatin1(name);
  return QString();
}

bool parseViewKind(const QString& s, ViewKind* out) {
  for (const auto& [k, name] : kNames) {
    if (s.compare(QLatin1String(name), Qt::CaseInsensitive) == 0) {
      if (out) *out = k;
      return true;
    }
  }
  return false;
}

bool ViewState::operator==(const ViewState& o) const {
  return group == o.group && layer == o.layer && head == o.head && item == o.item &&
         vsLayer == o.vsLayer && vsHead == o.vsHead && vsItem == o.vsItem && palette == o.palette &&
         showScores == o.showScores && perHeadScale == o.perHeadScale &&
         pinnedQuery == o.pinnedQuery && classroom == o.classroom && hideSpecial == o.hideSpecial;
}

}  // namespace attnscope::render
