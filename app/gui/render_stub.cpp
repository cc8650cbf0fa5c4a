// SPDX-License-Identifier: GPL-3.0-or-later
// TEMPORARY stand-in for branch `render` so the GUI links and can be looked at before the real
// views land. Delete this file (and the stub target in CMakeLists.txt) when merging `render`.
#include <QImage>
#include <QPainter>
#include <QPaintEvent>

#include "exporter.h"
#include "view_factory.h"

namespace attnscope::render {

QString toString(ViewKind kind) {
  switch (kind) {
    case ViewKind::Heatmap: return QStringLiteral("heatmap");
    case ViewKind::Grid: return QStringLiteral("grid");
    case ViewKind::Compare: return QStringLiteral("compare");
    case ViewKind::Stats: return QStringLiteral("stats");
    case ViewKind::Pipeline: return QStringLiteral("pipeline");
  }
  return {};
}

bool parseViewKind(const QString& s, ViewKind* out) {
  for (ViewKind k : {ViewKind::Heatmap, ViewKind::Grid, ViewKind::Compare, ViewKind::Stats, ViewKind::Pipeline}) {
    if (toString(k) == s) {
      *out = k;
      return true;
    }
  }
  return false;
}

bool ViewState::operator==(const ViewState& o) const {
  return layer == o.layer && head == o.head && item == o.item && vsLayer == o.vsLayer &&
         vsHead == o.vsHead && vsItem == o.vsItem && palette == o.palette &&
         showScores == o.showScores && perHeadScale == o.perHeadScale &&
         pinnedQuery == o.pinnedQuery && classroom == o.classroom;
}

bool parseImageFormat(const QString& s, ImageFormat* out) {
  if (s == "png") *out = ImageFormat::Png;
  else if (s == "svg") *out = ImageFormat::Svg;
  else if (s == "pdf") *out = ImageFormat::Pdf;
  else return false;
  return true;
}

namespace {

class StubView final : public AttentionView {
 public:
  StubView(ViewKind kind, QWidget* parent) : AttentionView(parent), m_kind(kind) {}
  ViewKind kind() const override { return m_kind; }
  void setResult(ResultPtr r) override { m_result = std::move(r); update(); }
  void setViewState(const ViewState& s) override { m_state = s; update(); }
  void renderTo(QPainter& p, const QRect& rect, const QString& title) override {
    p.fillRect(rect, palette().base());
    p.setPen(palette().text().color());
    p.drawText(rect.adjusted(8, 8, -8, -8), Qt::AlignTop | Qt::AlignLeft,
               QStringLiteral("%1 (stub) L%2 H%3 item %4  %5").arg(toString(m_kind)).arg(m_state.layer)
                   .arg(m_state.head).arg(m_state.item).arg(title));
    if (!m_result || m_result->attention.empty()) return;
    const int q = m_result->queries(), k = m_result->keys();
    const float* m = m_result->headMatrix(m_state.layer, m_state.item, m_state.head);
    const QRect area = rect.adjusted(40, 40, -40, -40);
    const double cw = double(area.width()) / k, ch = double(area.height()) / q;
    for (int i = 0; i < q; ++i)
      for (int j = 0; j < k; ++j)
        p.fillRect(QRectF(area.left() + j * cw, area.top() + i * ch, cw - 1, ch - 1),
                   QColor::fromHsvF(0.7 - 0.55 * m[i * k + j], 0.8, 0.3 + 0.7 * m[i * k + j]));
  }
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    renderTo(p, rect(), QString());
  }

 private:
  ViewKind m_kind;
  ResultPtr m_result;
  ViewState m_state;
};

}  // namespace

AttentionView* createView(ViewKind kind, QWidget* parent) { return new StubView(kind, parent); }

QImage Exporter::renderImage(AttentionView& view, const ExportOptions& o) {
  QImage image(o.width * o.dpi / 96, o.height * o.dpi / 96, QImage::Format_ARGB32);
  image.fill(Qt::white);
  QPainter p(&image);
  p.scale(o.dpi / 96.0, o.dpi / 96.0);
  view.renderTo(p, QRect(0, 0, o.width, o.height), o.title);
  return image;
}
QString Exporter::exportView(AttentionView& view, const QString& path, const ExportOptions& o) {
  return renderImage(view, o).save(path) ? QString() : QStringLiteral("cannot write %1").arg(path);
}
QString Exporter::exportAllHeads(const ResultPtr&, const ViewState&, const QString&, const ExportOptions&) {
  return QStringLiteral("all-heads export is not in this build yet");
}
QString Exporter::exportAttentionNpy(const AttentionResult&, const QString&) { return QStringLiteral("npy export is not in this build yet"); }
QString Exporter::exportAttentionCsv(const AttentionResult&, const QString&) { return QStringLiteral("csv export is not in this build yet"); }
QString Exporter::exportTraceJson(const AttentionResult&, const QString&) { return QStringLiteral("json export is not in this build yet"); }

}  // namespace attnscope::render
