// SPDX-License-Identifier: GPL-3.0-or-later
#include "view_factory.h"

#include "ablation_view.h"
#include "alignment_view.h"
#include "compare_view.h"
#include "experts_view.h"
#include "grid_view.h"
#include "heatmap_view.h"
#include "lines_view.h"
#include "logit_lens_view.h"
#include "pipeline_view.h"
#include "query_key_view.h"
#include "stats_view.h"
#include "step_view.h"
#include "text_view.h"

namespace attnscope::render {

AttentionView* createView(ViewKind kind, QWidget* parent) {
  switch (kind) {
    case ViewKind::Heatmap:
      return new HeatmapView(parent);
    case ViewKind::Grid:
      return new GridView(parent);
    case ViewKind::Compare:
      return new CompareView(parent);
    case ViewKind::Stats:
      return new StatsView(parent);
    case ViewKind::Pipeline:
      return new PipelineView(parent);
    case ViewKind::Lines:
      return new LinesView(parent);
    case ViewKind::Text:
      return new TextView(parent);
    case ViewKind::QueryKey:
      return new QueryKeyView(parent);
    case ViewKind::Alignment:
      return new AlignmentView(parent);
    case ViewKind::Ablation:
      return new AblationView(parent);
    case ViewKind::Step:
      return new StepView(parent);
    case ViewKind::LogitLens:
      return new LogitLensView(parent);
    case ViewKind::Experts:
      return new ExpertsView(parent);
  }
  return new HeatmapView(parent);
}

}  // namespace attnscope::render
