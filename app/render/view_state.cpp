// SPDX-License-Identifier: GPL-3.0-or-later
#include "view_state.h"

#include <algorithm>
#include <array>
#include <utility>

namespace attnscope::render {
namespace {

const std::array<std::pair<ViewKind, const char*>, 13> kNames = {{
    {ViewKind::Heatmap, "heatmap"},
    {ViewKind::Grid, "grid"},
    {ViewKind::Compare, "compare"},
    {ViewKind::Stats, "stats"},
    {ViewKind::Pipeline, "pipeline"},
    {ViewKind::Lines, "lines"},
    {ViewKind::Text, "text"},
    {ViewKind::QueryKey, "qk"},
    {ViewKind::Alignment, "alignment"},
    {ViewKind::Ablation, "ablation"},
    {ViewKind::Step, "step"},
    {ViewKind::LogitLens, "logit-lens"},
    {ViewKind::Experts, "experts"},
}};

const std::array<std::pair<TextSource, const char*>, 3> kSources = {{
    {TextSource::Head, "head"},
    {TextSource::MeanOverHeads, "mean"},
    {TextSource::Rollout, "rollout"},
}};

const std::array<std::pair<QueryAggregate, const char*>, 2> kAggregates = {{
    {QueryAggregate::Mean, "mean"},
    {QueryAggregate::Sum, "sum"},
}};

// A name table's lookups, both ways (names compare case-insensitively).
template <typename E, std::size_t N>
QString nameOf(const std::array<std::pair<E, const char*>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return QString::fromLatin1(name);
  return QString();
}

template <typename E, std::size_t N>
bool parseName(const std::array<std::pair<E, const char*>, N>& table, const QString& text, E* out) {
  for (const auto& [v, name] : table) {
    if (text.compare(QLatin1String(name), Qt::CaseInsensitive) == 0) {
      if (out) *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

QString toString(QueryAggregate aggregate) { return nameOf(kAggregates, aggregate); }
bool parseQueryAggregate(const QString& s, QueryAggregate* out) {
  return parseName(kAggregates, s, out);
}
QString toString(ViewKind kind) { return nameOf(kNames, kind); }
bool parseViewKind(const QString& s, ViewKind* out) { return parseName(kNames, s, out); }
QString toString(TextSource source) { return nameOf(kSources, source); }
bool parseTextSource(const QString& s, TextSource* out) { return parseName(kSources, s, out); }

QStringList statisticKeys() {
  return {QStringLiteral("entropy"), QStringLiteral("distance"),
          QStringLiteral("max"),     QStringLiteral("prev"),
          QStringLiteral("diag"),    QStringLiteral("first"),
          QStringLiteral("sink"),    QStringLiteral("distance-profile")};
}

int statisticIndex(const QString& key) { return key.isEmpty() ? 0 : statisticKeys().indexOf(key); }

bool ViewState::operator==(const ViewState& o) const {
  return group == o.group && layer == o.layer && head == o.head && item == o.item &&
         vsLayer == o.vsLayer && vsHead == o.vsHead && vsItem == o.vsItem && palette == o.palette &&
         showScores == o.showScores && scoreTerm == o.scoreTerm && perHeadScale == o.perHeadScale &&
         pinnedQuery == o.pinnedQuery && classroom == o.classroom && hideSpecial == o.hideSpecial &&
         pinnedKey == o.pinnedKey && lineHeads == o.lineHeads && lineThreshold == o.lineThreshold &&
         textSource == o.textSource && queryGroup == o.queryGroup && aggregate == o.aggregate &&
         mergeWords == o.mergeWords && logScale == o.logScale && dropSink == o.dropSink &&
         statistic == o.statistic;
}

std::vector<int> ViewState::selectedQueries() const {
  if (!queryGroup.empty()) return queryGroup;
  if (pinnedQuery >= 0) return {pinnedQuery};
  return {};
}

void ViewState::clickQuery(int token, bool toggle, bool range) {
  std::vector<int> selection = selectedQueries();
  if (range && pinnedQuery >= 0) {
    selection.clear();
    for (int t = std::min(pinnedQuery, token); t <= std::max(pinnedQuery, token); ++t)
      selection.push_back(t);
    // The anchor stays where the range began, so a second Shift click moves the other end.
  } else if (toggle) {
    const auto it = std::find(selection.begin(), selection.end(), token);
    if (it != selection.end()) {
      selection.erase(it);
      if (pinnedQuery == token) pinnedQuery = selection.empty() ? -1 : selection.back();
    } else {
      selection.push_back(token);
      pinnedQuery = token;
    }
  } else {
    pinnedQuery = pinnedQuery == token && queryGroup.empty() ? -1 : token;
    selection.clear();
  }
  std::sort(selection.begin(), selection.end());
  selection.erase(std::unique(selection.begin(), selection.end()), selection.end());
  queryGroup = selection.size() > 1 ? selection : std::vector<int>{};
  if (selection.size() == 1) pinnedQuery = selection.front();
}

std::vector<int> ViewState::overlaidHeads(int heads) const {
  std::vector<int> out;
  for (int h : lineHeads)
    if (h >= 0 && h < heads && std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  if (out.empty() && head >= 0 && head < heads) out.push_back(head);
  return out;
}

}  // namespace attnscope::render
