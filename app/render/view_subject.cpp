// SPDX-License-Identifier: GPL-3.0-or-later
#include "view_subject.h"

namespace attnscope::render {

QString viewSubject(ViewKind kind, const ViewState& state, bool allLayers, bool estimate) {
  switch (kind) {
    case ViewKind::Heatmap:
      return QStringLiteral("layer %1, head %2%3")
          .arg(state.layer)
          .arg(state.head)
          .arg(!state.showScores ? QString()
               : state.scoreTerm.isEmpty()
                   ? QStringLiteral(" · scaled scores")
                   : QStringLiteral(" · scores' %1 term").arg(state.scoreTerm));
    case ViewKind::Grid:
      return QStringLiteral("all heads");
    case ViewKind::Compare:
      return QStringLiteral("L%1 H%2 vs L%3 H%4%5")
          .arg(state.layer)
          .arg(state.head)
          .arg(state.vsLayer)
          .arg(state.vsHead)
          .arg(state.vsItem != state.item
                   ? QStringLiteral(" (sentences %1 and %2)").arg(state.item).arg(state.vsItem)
                   : QString());
    case ViewKind::Stats:
      return QStringLiteral("head statistics");
    case ViewKind::Pipeline:
      return QStringLiteral("layer %1 pipeline").arg(state.layer);
    case ViewKind::Lines:
      return state.lineHeads.size() > 1
                 ? QStringLiteral("layer %1, %2 heads").arg(state.layer).arg(state.lineHeads.size())
                 : QStringLiteral("layer %1, head %2")
                       .arg(state.layer)
                       .arg(state.lineHeads.empty() ? state.head : state.lineHeads.front());
    case ViewKind::Text:
      return QStringLiteral("attention as text");
    case ViewKind::QueryKey:
      return QStringLiteral("query · key, layer %1, head %2").arg(state.layer).arg(state.head);
    case ViewKind::Alignment:
      return allLayers ? QStringLiteral("alignment, every layer")
                       : QStringLiteral("alignment, layer %1").arg(state.layer);
    case ViewKind::Ablation:
      return QStringLiteral("head ablation%1")
          .arg(estimate ? QStringLiteral(" (estimate)") : QString());
    case ViewKind::Step:
      return QStringLiteral("generation step");
    case ViewKind::LogitLens:
      return QStringLiteral("logit lens");
    case ViewKind::Experts:
      return QStringLiteral("expert routing");
  }
  return QString();
}

}  // namespace attnscope::render
