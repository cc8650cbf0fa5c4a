// SPDX-License-Identifier: GPL-3.0-or-later
#include "lines_view.h"

#include <QDoubleSpinBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPixmap>
#include <QSignalBlocker>
#include <QToolButton>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"

namespace attnscope::render {
namespace {

constexpr double kMaxRowHeight = 26;  // short sentences keep a readable spacing, not a stretch
constexpr double kMinLabelPixels = 8;
constexpr int kSmoothLines = 5000;  // on screen, more lines than this are drawn without smoothing

bool validLayerSelection(const AttentionResult& r, const ViewState& s) {
  const AttentionGroup& g = r.group(s.group);
  return s.layer >= 0 && s.layer < g.layers() && s.item >= 0 && s.item < g.batch() && g.heads() > 0;
}

}  // namespace

LinesView::LinesView(QWidget* parent)
    : AttentionView(parent),
      m_bar(new QWidget(this)),
      m_headRow(new QHBoxLayout),
      m_selected(new QToolButton(m_bar)),
      m_all(new QToolButton(m_bar)),
      m_threshold(new QDoubleSpinBox(m_bar)) {
  setMouseTracking(true);
  setMinimumSize(240, 200);
  auto* bar = new QHBoxLayout(m_bar);
  bar->setContentsMargins(8, 4, 8, 0);
  bar->setSpacing(4);
  bar->addWidget(new QLabel(tr("Heads:"), m_bar));
  m_selected->setText(tr("Selected"));
  m_selected->setObjectName(QStringLiteral("linesSelectedHead"));
  m_selected->setToolTip(tr("Only the head selected in the window"));
  m_all->setText(tr("All"));
  m_all->setObjectName(QStringLiteral("linesAllHeads"));
  m_all->setToolTip(tr("Every head of the layer, each in its colour"));
  bar->addWidget(m_selected);
  bar->addWidget(m_all);
  m_headRow->setSpacing(1);
  bar->addLayout(m_headRow);
  bar->addSpacing(12);
  m_threshold->setObjectName(QStringLiteral("linesThreshold"));
  m_threshold->setPrefix(tr("hide below "));
  m_threshold->setRange(0.0, 1.0);
  m_threshold->setDecimals(3);
  m_threshold->setSingleStep(0.01);
  m_threshold->setToolTip(tr("Weights below this are not drawn (long inputs need it)"));
  bar->addWidget(m_threshold);
  bar->addStretch(1);
  connect(m_selected, &QToolButton::clicked, this, [this] { setHeads({}); });
  connect(m_all, &QToolButton::clicked, this, [this] {
    std::vector<int> all;
    const int heads = result() ? result()->group(viewState().group).heads() : 0;
    for (int h = 0; h < heads; ++h) all.push_back(h);
    setHeads(all);
  });
  connect(m_threshold, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    ViewState edited = viewState();
    edited.lineThreshold = v;
    Q_EMIT viewStateEdited(edited);
  });
  setControlBar(m_bar);
  updateBar();
}

void LinesView::setHeads(std::vector<int> heads) {
  ViewState edited = viewState();
  edited.lineHeads = std::move(heads);
  Q_EMIT viewStateEdited(edited);
}

void LinesView::rebuild(Change change) {
  const ViewState& state = viewState();
  if (change == Change::Result) m_hoverIndex = -1;  // the hovered token may be gone
  m_heads.clear();
  m_matrices.clear();
  if (result() && validLayerSelection(*result(), state)) {
    const AttentionGroup& g = result()->group(state.group);
    m_heads = state.overlaidHeads(g.heads());
    for (int h : m_heads)
      m_matrices.push_back(HeadMatrix::of(g, state.layer, state.item, h, false, state.hideSpecial,
                                          state.mergeWords));
  }
  m_cache = QImage();
  updateBar();
  update();
}

void LinesView::updateBar() {
  const int heads = result() ? result()->group(viewState().group).heads() : 0;
  if (static_cast<int>(m_headButtons.size()) != heads) {
    for (QToolButton* b : m_headButtons) delete b;
    m_headButtons.clear();
    for (int h = 0; h < heads; ++h) {
      auto* b = new QToolButton(m_bar);
      b->setObjectName(QStringLiteral("linesHead%1").arg(h));
      b->setText(QString::number(h));
      b->setCheckable(true);
      b->setToolTip(tr("Overlay head %1 of the layer").arg(h));
      // The head's colour as a swatch beside a plain digit: tab10's orange or green as the
      // digit's own colour was 2.3–3.1:1 on the button, unreadable for a number.
      QPixmap swatch(10, 10);
      swatch.fill(Palette::categorical(h));
      b->setIcon(QIcon(swatch));
      b->setIconSize(swatch.size());
      b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
      connect(b, &QToolButton::clicked, this, [this, h] {
        const int n = result() ? result()->group(viewState().group).heads() : 0;
        std::vector<int> shown = viewState().overlaidHeads(n);
        const auto it = std::find(shown.begin(), shown.end(), h);
        if (it == shown.end()) {
          shown.push_back(h);
          std::sort(shown.begin(), shown.end());
        } else {
          shown.erase(it);
        }
        setHeads(shown);
      });
      m_headRow->addWidget(b);
      m_headButtons.push_back(b);
    }
  }
  for (int h = 0; h < heads; ++h) {
    const QSignalBlocker block(m_headButtons[static_cast<std::size_t>(h)]);
    m_headButtons[static_cast<std::size_t>(h)]->setChecked(
        std::find(m_heads.begin(), m_heads.end(), h) != m_heads.end());
  }
  const QSignalBlocker block(m_threshold);
  m_threshold->setValue(viewState().lineThreshold);
}

LinesView::Layout LinesView::layoutFor(const QRectF& area, const RenderStyle& style) const {
  Layout lay;
  if (m_matrices.empty()) return lay;
  const HeadMatrix& m = m_matrices.front();
  const QFontMetricsF small(style.font(12));
  lay.caption = QRectF(area.left() + 8, area.top() + 4, area.width() - 16, small.height() * 2.4);
  const double top = lay.caption.bottom() + 10, bottom = area.bottom() - 8;
  const int rows = std::max({m.rows, m.cols, 1});
  lay.rowHeight = std::min(kMaxRowHeight, std::max(0.5, (bottom - top) / rows));
  lay.top = top;
  lay.fontPixels = std::clamp(lay.rowHeight * 0.85, kMinLabelPixels, 14.0);
  const QFont font = style.font(lay.fontPixels);
  const QFontMetricsF fm(font);
  lay.labelStep = std::max(1, static_cast<int>(std::ceil(fm.height() * 0.95 / lay.rowHeight)));
  const double widest = std::max(MatrixPainter::labelWidth(m.rowLabels, font),
                                 MatrixPainter::labelWidth(m.colLabels, font));
  // Labels never take more than a third of the width each: the lines need the middle.
  lay.labelWidth = std::min(widest + 8, area.width() / 3.0);
  const double lines = std::clamp(area.width() - 2 * lay.labelWidth - 32, 60.0, 520.0);
  const double left = area.center().x() - lines / 2 - lay.labelWidth;
  lay.queryRight = left + lay.labelWidth;
  lay.keyLeft = lay.queryRight + lines;
  return lay;
}

QRectF LinesView::labelRect(const Layout& lay, bool key, int index) const {
  const double y = lay.top + index * lay.rowHeight;
  return key ? QRectF(lay.keyLeft, y, lay.labelWidth, lay.rowHeight)
             : QRectF(lay.queryRight - lay.labelWidth, y, lay.labelWidth, lay.rowHeight);
}

QRectF LinesView::tokenRect(bool key, int index) const {
  return labelRect(m_lastLayout, key, index);
}

void LinesView::draw(QPainter& painter, const QRect& area, const RenderStyle& style,
                     bool onScreen) {
  const ViewState& state = viewState();
  m_drawn = Drawn();
  if (m_matrices.empty() || m_matrices.front().rows == 0 || m_matrices.front().missing) {
    style.drawMessage(painter, area,
                      !m_matrices.empty() && m_matrices.front().missing
                          ? missingLayerMessage(result().get(), state.layer)
                      : result() ? QStringLiteral("Selection out of range")
                                 : QStringLiteral("No result yet"));
    return;
  }
  const Layout lay = layoutFor(area, style);
  m_lastLayout = lay;
  if (onScreen) m_screenLayout = lay;
  const HeadMatrix& first = m_matrices.front();
  // The isolated token: the one under the mouse on screen, else the pinned query.
  if (onScreen && m_hoverIndex >= 0) {
    m_drawn.focusRow = m_hoverIndex;
    m_drawn.focusKey = m_hoverKey;
  } else if (state.pinnedQuery >= 0) {
    m_drawn.focusRow = first.rowOfToken(state.pinnedQuery);
  }
  drawLines(painter, lay, onScreen);
  drawLabels(painter, lay, style);
  drawCaption(painter, lay, style);
}

void LinesView::drawLines(QPainter& painter, const Layout& lay, bool onScreen) {
  const double threshold = std::max(0.0, viewState().lineThreshold);
  // Weights are opacities as they are; other measures (value norms) as a fraction of the largest.
  const bool weights = m_matrices.front().distribution;
  double largest = 0;
  for (const HeadMatrix& m : m_matrices) largest = std::max<double>(largest, m.maxValue);
  const double unit = weights || largest <= 0 ? 1.0 : 1.0 / largest;
  const double x0 = lay.queryRight + 4, x1 = lay.keyLeft - 4;
  const double width =
      std::clamp(lay.rowHeight * 0.22, 0.6, 2.2) * (m_drawn.focusRow >= 0 ? 1.5 : 1);
  // Lines are gathered per head and opacity step and drawn in one call each: one pen per batch
  // instead of one per line.
  constexpr int kLevels = 64;  // opacity steps: finer than the eye can tell apart
  std::vector<std::vector<QVector<QLineF>>> batches(
      m_matrices.size(), std::vector<QVector<QLineF>>(kLevels + 1));  // [head][level]
  for (std::size_t i = 0; i < m_matrices.size(); ++i) {
    const HeadMatrix& m = m_matrices[i];
    for (int q = 0; q < m.rows; ++q) {
      if (m_drawn.focusRow >= 0 && !m_drawn.focusKey && q != m_drawn.focusRow) continue;
      const double yq = lay.top + (q + 0.5) * lay.rowHeight;
      for (int k = 0; k < m.cols; ++k) {
        if (m_drawn.focusRow >= 0 && m_drawn.focusKey && k != m_drawn.focusRow) continue;
        const double w = m.at(q, k) * unit;
        if (!(w > 0)) continue;
        if (w < threshold) {
          ++m_drawn.belowThreshold;
          continue;
        }
        const int level = std::clamp(static_cast<int>(std::lround(w * kLevels)), 1, kLevels);
        batches[i][static_cast<std::size_t>(level)].append(
            QLineF(x0, yq, x1, lay.top + (k + 0.5) * lay.rowHeight));
        ++m_drawn.lines;
      }
    }
  }
  // Antialiasing costs ~7x: on screen, tens of thousands of lines (256 tokens, 12 heads) are drawn
  // without it so hovering stays fluid; exports, and isolated tokens, are always smooth.
  painter.setRenderHint(QPainter::Antialiasing, !onScreen || m_drawn.lines <= kSmoothLines);
  for (std::size_t i = 0; i < m_matrices.size(); ++i) {
    QColor color = Palette::categorical(m_heads[i]);
    for (int level = 1; level <= kLevels; ++level) {
      const QVector<QLineF>& lines = batches[i][static_cast<std::size_t>(level)];
      if (lines.isEmpty()) continue;
      color.setAlphaF(double(level) / kLevels);
      painter.setPen(QPen(color, width, Qt::SolidLine, Qt::FlatCap));
      painter.drawLines(lines);
    }
  }
  painter.setRenderHint(QPainter::Antialiasing, false);
}

void LinesView::drawLabels(QPainter& painter, const Layout& lay, const RenderStyle& style) const {
  // Token labels, the isolated one on an accent box.
  const HeadMatrix& first = m_matrices.front();
  const QFont font = style.font(lay.fontPixels);
  painter.setFont(font);
  const auto drawColumn = [&](bool key, const QStringList& labels) {
    for (int i = 0; i < labels.size(); ++i) {
      const bool focus = m_drawn.focusRow == i && m_drawn.focusKey == key;
      if (i % lay.labelStep != 0 && !focus) continue;
      // Thinned labels stand for a band of rows: centre them on their own row still.
      QRectF r = labelRect(lay, key, i);
      r.setHeight(std::max(r.height(), QFontMetricsF(font).height()));
      r.moveCenter(QPointF(r.center().x(), lay.top + (i + 0.5) * lay.rowHeight));
      if (focus) {
        painter.fillRect(r, style.accent);
        painter.setPen(style.background);
      } else {
        painter.setPen(style.text);
      }
      painter.drawText(r.adjusted(4, 0, -4, 0),
                       (key ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter, labels[i]);
    }
  };
  drawColumn(false, first.rowLabels);
  drawColumn(true, first.colLabels);
}

void LinesView::drawCaption(QPainter& painter, const Layout& lay, const RenderStyle& style) const {
  // Which heads in which colour, and what was left out.
  const ViewState& state = viewState();
  const HeadMatrix& first = m_matrices.front();
  const QFont captionFont = style.font(12);
  const QFontMetricsF cfm(captionFont);
  painter.setFont(captionFont);
  double x = lay.caption.left();
  const double y = lay.caption.top();
  painter.setPen(style.text);
  const QString head = QStringLiteral("layer %1 · item %2 · ").arg(state.layer).arg(state.item);
  painter.drawText(QPointF(x, y + cfm.ascent()), head);
  x += cfm.horizontalAdvance(head);
  for (std::size_t i = 0; i < m_heads.size(); ++i) {
    const QColor c = Palette::categorical(m_heads[i]);
    const QString name = QStringLiteral("H%1").arg(m_heads[i]);
    const double w = cfm.horizontalAdvance(name) + 18;
    if (x + w > lay.caption.right()) break;  // many heads: the buttons on screen name them all
    painter.fillRect(QRectF(x, y + cfm.ascent() - 9, 10, 10), c);
    painter.setPen(style.text);
    painter.drawText(QPointF(x + 13, y + cfm.ascent()), name);
    x += w;
  }
  const double threshold = std::max(0.0, state.lineThreshold);
  QString note = QStringLiteral("queries left, keys right · opacity = %1 · %2 line%3 drawn")
                     .arg(first.distribution ? QStringLiteral("weight")
                                             : QStringLiteral("value norm / the largest"))
                     .arg(m_drawn.lines)
                     .arg(m_drawn.lines == 1 ? QString() : QStringLiteral("s"));
  if (threshold > 0)
    note += QStringLiteral(" · lines below %1 not drawn (%2)")
                .arg(MatrixPainter::formatValue(threshold, threshold < 0.01 ? 3 : 2))
                .arg(m_drawn.belowThreshold);
  if (m_drawn.focusRow >= 0) {
    const QStringList& texts = m_drawn.focusKey ? first.colTexts : first.rowTexts;
    note += QStringLiteral(" · only %1 '%2'")
                .arg(m_drawn.focusKey ? QStringLiteral("into key") : QStringLiteral("from query"))
                .arg(axisLabel(texts.value(m_drawn.focusRow)));
  }
  if (first.hiddenSpecial > 0) note += QStringLiteral(" · ") + hiddenSpecialNote(false);
  painter.setPen(style.muted);
  painter.drawText(
      QRectF(lay.caption.left(), y + cfm.height() * 1.2, lay.caption.width(), cfm.height()),
      Qt::AlignLeft | Qt::AlignVCenter, cfm.elidedText(note, Qt::ElideRight, lay.caption.width()));
}

void LinesView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const QRect area = canvas();
  if (m_hoverIndex >= 0 || viewState().pinnedQuery >= 0) {
    paintView(painter, area, QString(), true);  // one token's lines: quick to draw
    return;
  }
  // Every line of every head can take a good part of a second at 256 tokens: kept as an image
  // until the result, the state, the size or the palette changes, so leaving a hovered token
  // redraws at once.
  const qreal ratio = devicePixelRatioF();
  if (m_cache.isNull() || m_cache.size() != area.size() * ratio) {
    m_cache = QImage(area.size() * ratio, QImage::Format_ARGB32_Premultiplied);
    m_cache.setDevicePixelRatio(ratio);
    QPainter p(&m_cache);
    p.translate(-area.topLeft());  // draw in widget coordinates: the layout is hit-tested in them
    paintView(p, area, QString(), true);
    m_cacheDrawn = m_drawn;
  }
  painter.drawImage(area.topLeft(), m_cache);
  m_drawn = m_cacheDrawn;
  m_lastLayout = m_screenLayout;
}

void LinesView::changeEvent(QEvent* event) {
  AttentionView::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange)
    m_cache = QImage();
}

bool LinesView::hit(const QPointF& pos, bool* key, int* index) const {
  if (m_matrices.empty() || m_screenLayout.rowHeight <= 0) return false;
  const Layout& lay = m_screenLayout;
  const int i = static_cast<int>(std::floor((pos.y() - lay.top) / lay.rowHeight));
  if (pos.x() >= lay.queryRight - lay.labelWidth && pos.x() <= lay.queryRight + 4) {
    *key = false;
  } else if (pos.x() >= lay.keyLeft - 4 && pos.x() <= lay.keyLeft + lay.labelWidth) {
    *key = true;
  } else {
    return false;
  }
  const HeadMatrix& m = m_matrices.front();
  if (i < 0 || i >= (*key ? m.cols : m.rows)) return false;
  *index = i;
  return true;
}

void LinesView::mouseMoveEvent(QMouseEvent* event) {
  bool key = false;
  int index = -1;
  if (!hit(event->position(), &key, &index)) index = -1;
  if (index != m_hoverIndex || key != m_hoverKey) {
    m_hoverIndex = index;
    m_hoverKey = key;
    update();
  }
  if (index >= 0) {
    const HeadMatrix& m = m_matrices.front();
    const QString text = key ? m.colTexts.value(index) : m.rowTexts.value(index);
    const int position = (key ? m.colTokens : m.rowTokens)[static_cast<std::size_t>(index)];
    QToolTip::showText(
        event->globalPosition().toPoint(),
        key ? tr("key '%1' (#%2): the lines into it").arg(text).arg(position)
            : tr("query '%1' (#%2): its lines; click to pin").arg(text).arg(position),
        this);
  } else {
    QToolTip::hideText();
  }
}

void LinesView::leaveEvent(QEvent* event) {
  AttentionView::leaveEvent(event);
  if (m_hoverIndex >= 0) {
    m_hoverIndex = -1;
    update();
  }
}

void LinesView::mouseReleaseEvent(QMouseEvent* event) {
  bool key = false;
  int index = -1;
  if (event->button() != Qt::LeftButton || !hit(event->position(), &key, &index) || key) return;
  const int token = m_matrices.front().rowTokens[static_cast<std::size_t>(index)];
  ViewState edited = viewState();
  edited.pinnedQuery = viewState().pinnedQuery == token ? -1 : token;
  Q_EMIT viewStateEdited(edited);
}

}  // namespace attnscope::render
