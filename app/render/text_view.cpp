// SPDX-License-Identifier: GPL-3.0-or-later
#include "text_view.h"

#include <QComboBox>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSignalBlocker>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "attnscope/attention_rollout.h"
#include "attnscope/error.h"
#include "head_matrix.h"
#include "matrix_painter.h"
#include "palette.h"
#include "render_style.h"
#include "token_spacing.h"

namespace attnscope::render {
namespace {

constexpr double kMaxFontPixels = 17, kMinFontPixels = 6;
constexpr double kPad = 1;  // inside a token's box, around its text

// What a token's box says: its text as typed (BPE's byte pieces that are not whole characters,
// and special tokens, by their label), tabs as spaces, and a line break as "⏎".
QString displayText(const Token& t, bool* newline) {
  QString s = QString::fromUtf8(t.text.data(), static_cast<int>(t.text.size()));
  *newline = s.contains(QLatin1Char('\n'));
  if (t.special || s.isEmpty() || s.contains(QChar(0xFFFD))) {
    s = QString::fromStdString(t.label.empty() ? t.text : t.label);
  }
  s.replace(QLatin1Char('\t'), QLatin1Char(' '));
  s.remove(QLatin1Char('\r'));
  if (*newline) s.replace(QLatin1Char('\n'), QChar(0x23CE));
  return s;
}

}  // namespace

TextView::TextView(QWidget* parent)
    : AttentionView(parent), m_bar(new QWidget(this)), m_source(new QComboBox(m_bar)) {
  setMouseTracking(true);
  setMinimumSize(240, 160);
  auto* bar = new QHBoxLayout(m_bar);
  bar->setContentsMargins(8, 4, 8, 0);
  bar->addWidget(new QLabel(tr("Colour by:"), m_bar));
  m_source->setObjectName(QStringLiteral("textSource"));
  m_source->addItem(tr("the selected head"), static_cast<int>(TextSource::Head));
  m_source->addItem(tr("the mean over the layer's heads"),
                    static_cast<int>(TextSource::MeanOverHeads));
  m_source->addItem(tr("rollout through the layer"), static_cast<int>(TextSource::Rollout));
  m_source->setToolTip(
      tr("Rollout composes every layer up to the selected one, with the residual as ½·I "
         "(Abnar & Zuidema, 2020)"));
  bar->addWidget(m_source);
  bar->addStretch(1);
  connect(m_source, &QComboBox::currentIndexChanged, this, [this](int index) {
    ViewState edited = viewState();
    edited.textSource = static_cast<TextSource>(m_source->itemData(index).toInt());
    Q_EMIT viewStateEdited(edited);
  });
  setControlBar(m_bar);
}

TextView::TextInputs TextView::TextInputs::of(const ViewState& s) {
  return {s.group, s.layer, s.head, s.item, s.hideSpecial, s.mergeWords, s.textSource};
}

bool TextView::TextInputs::operator==(const TextInputs& o) const {
  return group == o.group && layer == o.layer && head == o.head && item == o.item &&
         hideSpecial == o.hideSpecial && mergeWords == o.mergeWords && textSource == o.textSource;
}

void TextView::rebuild(Change change) {
  if (change == Change::Result) m_hover = -1;  // the hovered box may be gone
  // The values (a rollout multiplies L matrices of T × T) depend on the result and the inputs
  // alone: pinning or selecting tokens only recolours. A failed content is tried again.
  const TextInputs inputs = TextInputs::of(viewState());
  if (change == Change::Result || inputs != m_inputs || m_content.values.empty()) {
    m_inputs = inputs;
    m_content = contentOf(result().get(), inputs);
  }
  const QSignalBlocker block(m_source);
  m_source->setCurrentIndex(m_source->findData(static_cast<int>(inputs.textSource)));
  update();
}

TextView::Content TextView::contentOf(const AttentionResult* result, const TextInputs& s) {
  Content c;
  if (!result) {
    c.problem = QStringLiteral("No result yet");
    return c;
  }
  const AttentionGroup& g = result->group(s.group);
  if (s.layer < 0 || s.layer >= g.layers() || s.item < 0 || s.item >= g.batch() || s.head < 0 ||
      s.head >= g.heads()) {
    c.problem = QStringLiteral("Selection out of range");
    return c;
  }
  // Rollout multiplies every layer up to this one.
  for (int l = s.textSource == TextSource::Rollout ? 0 : s.layer; l <= s.layer; ++l) {
    if (!g.hasLayer(l)) {
      c.problem = missingLayerMessage(result, l);
      return c;
    }
  }
  if (!g.contextTokens.empty()) {
    c.problem = QStringLiteral(
        "The text view shows self-attention: here the keys are another text (cross-attention)");
    return c;
  }
  const HeadMatrix selected =
      HeadMatrix::of(g, s.layer, s.item, s.head, false, s.hideSpecial, s.mergeWords);
  const int n = selected.rows;
  if (n == 0 || selected.cols != n) {
    c.problem = QStringLiteral("No tokens to show");
    return c;
  }
  c.positions = selected.rowTokens;
  c.lasts = selected.rowLast;
  c.hiddenSpecial = selected.hiddenSpecial;
  const std::vector<Token>* tokens = s.item < static_cast<int>(g.tokens.size())
                                         ? &g.tokens[static_cast<std::size_t>(s.item)]
                                         : nullptr;
  for (int i = 0; i < n; ++i) {
    const int p = c.positions[static_cast<std::size_t>(i)];
    bool newline = false;
    if (tokens && p < static_cast<int>(tokens->size())) {
      // A merged word's tokens, one after another; a leading space where the input had one that
      // the token's text lacks (WordPiece), which the layout turns into a gap.
      QString text;
      for (int t = p; t <= c.lasts[static_cast<std::size_t>(i)]; ++t) {
        if ((i > 0 || t > p) && needsSpaceBefore(*tokens, t)) text += QLatin1Char(' ');
        text += displayText((*tokens)[static_cast<std::size_t>(t)], &newline);
      }
      c.texts << axisLabel(text);
    } else {
      c.texts << QString::number(p);  // random input: positions stand in
    }
    c.labels << selected.rowTexts.value(i);
    c.newline.push_back(newline);
  }
  fillValues(g, s, selected, c);
  return c;
}

void TextView::fillValues(const AttentionGroup& g, const TextInputs& s, const HeadMatrix& selected,
                          Content& c) {
  const int n = selected.rows;
  c.values.assign(static_cast<std::size_t>(n) * n, 0.0);
  switch (s.textSource) {
    case TextSource::Head:
      std::copy(selected.values.begin(), selected.values.end(), c.values.begin());
      break;
    case TextSource::MeanOverHeads:
      for (int h = 0; h < g.heads(); ++h) {
        const HeadMatrix m =
            HeadMatrix::of(g, s.layer, s.item, h, false, s.hideSpecial, s.mergeWords);
        for (std::size_t i = 0; i < c.values.size(); ++i) c.values[i] += m.values[i] / g.heads();
      }
      break;
    case TextSource::Rollout: {
      if (g.onDemand()) {
        // attentionRollout multiplies stored layers; recomputing every layer whole is not done.
        c.problem = QStringLiteral(
            "Rollout needs every layer's stored attention: this long input's attention is "
            "recomputed on demand (choose the head or the mean over heads)");
        break;
      }
      try {
        const AttentionRollout rollout = attentionRollout(g, s.item, s.layer);
        // Merged words as in HeadMatrix: a word's keys summed, its queries averaged.
        const auto span = [&c](int i) {
          return std::make_pair(c.positions[static_cast<std::size_t>(i)],
                                c.lasts[static_cast<std::size_t>(i)]);
        };
        for (int q = 0; q < n; ++q) {
          double sum = 0;
          const auto [q0, q1] = span(q);
          for (int k = 0; k < n; ++k) {
            const auto [k0, k1] = span(k);
            double v = 0;
            for (int a = q0; a <= q1; ++a)
              for (int b = k0; b <= k1; ++b) v += rollout.at(a, b);
            v /= q1 - q0 + 1;
            c.values[static_cast<std::size_t>(q) * n + k] = v;
            sum += v;
          }
          // Without special tokens the rest of each row is renormalised, as in every view.
          if (s.hideSpecial && sum > 0)
            for (int k = 0; k < n; ++k) c.values[static_cast<std::size_t>(q) * n + k] /= sum;
        }
      } catch (const Error& e) {
        c.problem = QString::fromStdString(e.what());
        c.values.clear();
        return;
      }
      break;
    }
  }
  // A causal model leaves every later key at exactly 0: those boxes stay unfilled.
  c.causal = true;
  for (int q = 0; q < n && c.causal; ++q)
    for (int k = q + 1; k < n; ++k)
      if (c.values[static_cast<std::size_t>(q) * n + k] != 0.0) {
        c.causal = false;
        break;
      }
}

double TextView::value(int query, int key) const {
  const int n = static_cast<int>(m_content.positions.size());
  if (m_content.values.empty() || query < 0 || key < 0 || query >= n || key >= n)
    return std::numeric_limits<double>::quiet_NaN();
  return m_content.values[static_cast<std::size_t>(query) * n + key];
}

QString TextView::sourceText() const {
  const ViewState& state = viewState();
  switch (state.textSource) {
    case TextSource::Head:
      return QStringLiteral("layer %1, head %2").arg(state.layer).arg(state.head);
    case TextSource::MeanOverHeads:
      return QStringLiteral("mean over the heads of layer %1").arg(state.layer);
    case TextSource::Rollout:
      return state.layer == 0 ? QStringLiteral("rollout of layer 0")
                              : QStringLiteral("rollout through layers 0–%1").arg(state.layer);
  }
  return {};
}

bool TextView::wrap(const QRectF& area, const RenderStyle& style, double pixels,
                    Layout* out) const {
  const QFontMetricsF fm(style.font(pixels));
  const double boxHeight = fm.height() + 2, lineHeight = boxHeight + std::max(2.0, pixels * 0.35);
  const double space = fm.horizontalAdvance(QLatin1Char(' '));
  const int n = static_cast<int>(m_content.texts.size());
  // Each box: the leading spaces before it (a gap) and its text, which the box hugs.
  std::vector<double> gaps(static_cast<std::size_t>(n)), widths(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const QString& text = m_content.texts[i];
    int lead = 0;
    while (lead < text.size() && text[lead] == QLatin1Char(' ')) ++lead;
    if (lead == text.size()) lead = 0;  // a token of spaces only is a box as wide as they are
    gaps[static_cast<std::size_t>(i)] = lead * space;
    widths[static_cast<std::size_t>(i)] =
        std::max(fm.horizontalAdvance(text.mid(lead)), 3.0) + 2 * kPad;
  }
  // A word starts after a space or a line break: lines wrap between words, so a character-level
  // model's text wraps like text, and between tokens only inside a word longer than a line.
  const auto startsWord = [&](int i) {
    return i == 0 || gaps[static_cast<std::size_t>(i)] > 0 ||
           m_content.texts[i - 1].endsWith(QLatin1Char(' ')) ||
           m_content.newline[static_cast<std::size_t>(i - 1)];
  };
  out->boxes.clear();
  out->fontPixels = pixels;
  double x = area.left(), y = area.top();
  for (int i = 0; i < n; ++i) {
    double gap = gaps[static_cast<std::size_t>(i)],
           need = gap + widths[static_cast<std::size_t>(i)];
    if (startsWord(i)) {
      for (int j = i + 1; j < n && !startsWord(j); ++j) need += widths[static_cast<std::size_t>(j)];
    }
    const bool fits = x + need <= area.right();
    const bool wholeWordFits = area.left() + need <= area.right();
    if (x > area.left() && ((startsWord(i) && !fits && wholeWordFits) ||
                            x + gap + widths[static_cast<std::size_t>(i)] > area.right())) {
      x = area.left();
      y += lineHeight;
      gap = 0;
    }
    out->boxes.emplace_back(x + gap, y, widths[static_cast<std::size_t>(i)], boxHeight);
    x += gap + widths[static_cast<std::size_t>(i)];  // boxes abut, as letters do
    if (m_content.newline[static_cast<std::size_t>(i)]) {
      x = area.left();
      y += lineHeight;
    }
  }
  return y + boxHeight <= area.bottom();
}

TextView::Layout TextView::layoutFor(const QRectF& area, const RenderStyle& style) const {
  Layout lay;
  const QFontMetricsF small(style.font(12));
  lay.legend = QRectF(area.left() + 8, area.top() + 4, area.width() - 16, small.height() * 3.2);
  const QRectF text(area.left() + 10, lay.legend.bottom() + 10, area.width() - 20,
                    area.bottom() - lay.legend.bottom() - 16);
  // The largest font at which the whole text fits, in half-pixel steps.
  for (double px = kMaxFontPixels; px >= kMinFontPixels; px -= 0.5) {
    if (wrap(text, style, px, &lay)) return lay;
  }
  wrap(text, style, kMinFontPixels, &lay);  // too long even so: the end is clipped
  return lay;
}

QRectF TextView::tokenRect(int index) const {
  return index >= 0 && index < static_cast<int>(m_lastBoxes.size())
             ? m_lastBoxes[static_cast<std::size_t>(index)]
             : QRectF();
}

void TextView::draw(QPainter& painter, const QRect& area, const RenderStyle& style, bool onScreen) {
  m_lastQuery = -1;
  m_lastMax = 0;
  m_lastBoxes.clear();
  if (!m_content.problem.isEmpty() || m_content.values.empty()) {
    style.drawMessage(
        painter, area,
        m_content.problem.isEmpty() ? QStringLiteral("Nothing to show") : m_content.problem);
    return;
  }
  const int n = static_cast<int>(m_content.positions.size());
  const bool hovering = onScreen && m_hover >= 0 && m_hover < n;
  const std::vector<int> selection = hovering ? std::vector<int>{m_hover} : selectedIndices();
  const int query = selection.empty() ? n - 1 : selection.back();  // else the last token
  std::vector<double> row(static_cast<std::size_t>(n));
  if (hovering) {
    for (int k = 0; k < n; ++k) row[static_cast<std::size_t>(k)] = value(query, k);
  } else {
    row = shownRow();
  }
  double hi = 0;
  for (double v : row) hi = std::max(hi, v);
  hi = std::max(hi, 1e-9);
  m_lastQuery = query;
  m_lastMax = hi;
  // A causal query cannot see later keys; several see up to the latest of them.
  const int seen =
      selection.empty() ? query : *std::max_element(selection.begin(), selection.end());

  const Layout lay = layoutFor(area, style);
  m_lastBoxes = lay.boxes;
  if (onScreen) m_screenBoxes = lay.boxes;
  const Palette palette = Palette::named(viewState().palette);
  const QFont font = style.font(lay.fontPixels);
  painter.setFont(font);
  painter.setClipRect(area);
  for (int k = 0; k < n; ++k) {
    const QRectF& box = lay.boxes[static_cast<std::size_t>(k)];
    if (box.top() > area.bottom()) break;
    const double v = row[static_cast<std::size_t>(k)];
    const bool unseen = m_content.causal && k > seen;
    QColor ink = style.muted;
    if (!unseen) {
      const QColor fill = palette.colorAt(v / hi);
      painter.fillRect(box, fill);
      ink = Palette::inkOn(fill);
    }
    painter.setPen(ink);
    QString body = m_content.texts[k];
    while (body.size() > 1 && body.startsWith(QLatin1Char(' '))) body.remove(0, 1);
    painter.drawText(box, Qt::AlignCenter, body);
    if (k == query || std::find(selection.begin(), selection.end(), k) != selection.end()) {
      painter.setPen(QPen(style.accent, k == query ? 2 : 1.5));
      painter.setBrush(Qt::NoBrush);
      painter.drawRect(box.adjusted(-1, -1, 1, 1));
    }
  }
  painter.setClipping(false);

  drawLegend(painter, lay.legend, style, selection, query, hi);
}

void TextView::drawLegend(QPainter& painter, const QRectF& legend, const RenderStyle& style,
                          const std::vector<int>& selection, int query, double hi) const {
  // Which query, which source, and the colour scale.
  const QRectF& L = legend;
  const Palette palette = Palette::named(viewState().palette);
  const QFont captionFont = style.font(12);
  const QFontMetricsF cfm(captionFont);
  painter.setFont(captionFont);
  painter.setPen(style.text);
  const auto positionsOf = [this](int i) {
    const int first = m_content.positions[static_cast<std::size_t>(i)];
    const int last = m_content.lasts[static_cast<std::size_t>(i)];
    return first == last ? QStringLiteral("#%1").arg(first)
                         : QStringLiteral("#%1–%2").arg(first).arg(last);
  };
  const QString from =
      selection.size() > 1
          ? QStringLiteral("%1 of the attention from %2 selected %3")
                .arg(viewState().aggregate == QueryAggregate::Sum ? QStringLiteral("sum")
                                                                  : QStringLiteral("mean"))
                .arg(selection.size())
                .arg(m_content.lasts != m_content.positions ? QStringLiteral("words")
                                                            : QStringLiteral("tokens"))
          : QStringLiteral("attention from '%1' (%2)")
                .arg(m_content.labels.value(query), positionsOf(query));
  painter.drawText(
      QRectF(L.left(), L.top(), L.width(), cfm.height()), Qt::AlignLeft | Qt::AlignVCenter,
      cfm.elidedText(
          QStringLiteral("%1 · %2 · item %3").arg(from, sourceText()).arg(viewState().item),
          Qt::ElideMiddle, L.width()));
  const QRectF bar(L.left(), L.top() + cfm.height() * 1.35, std::min(240.0, L.width() / 3), 10);
  QImage ramp(256, 1, QImage::Format_RGB32);
  const QVector<unsigned int> lut = palette.lookupTable(256);
  for (int i = 0; i < 256; ++i) ramp.setPixel(i, 0, lut[i]);
  MatrixPainter::drawCells(painter, bar, ramp);
  painter.setPen(QPen(style.frame, 0));
  painter.drawRect(bar);
  painter.setPen(style.text);
  const double textY = bar.bottom() + 2;
  painter.drawText(QRectF(bar.left() - 20, textY, 40, cfm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, QStringLiteral("0"));
  painter.drawText(QRectF(bar.right() - 40, textY, 80, cfm.height()),
                   Qt::AlignHCenter | Qt::AlignTop, MatrixPainter::formatValue(hi));
  QString note = QStringLiteral(
      "hover or click a token to colour by its attention (Ctrl, Shift or drag: several)");
  if (m_content.causal) note += QStringLiteral(" · unfilled: later tokens it cannot see");
  if (m_content.hiddenSpecial > 0) note += QStringLiteral(" · ") + hiddenSpecialNote(false);
  if (m_content.lasts != m_content.positions)
    note += QStringLiteral(" · ") + mergedWordsNote(false);
  painter.setPen(style.muted);
  painter.drawText(
      QRectF(bar.right() + 30, bar.top() - 3, L.right() - bar.right() - 30, cfm.height() * 1.2),
      Qt::AlignLeft | Qt::AlignVCenter,
      cfm.elidedText(note, Qt::ElideRight, L.right() - bar.right() - 30));
}

int TextView::hit(const QPointF& pos) const {
  for (std::size_t i = 0; i < m_screenBoxes.size(); ++i)
    if (m_screenBoxes[i].contains(pos)) return static_cast<int>(i);
  return -1;
}

void TextView::mouseMoveEvent(QMouseEvent* event) {
  const int i = hit(event->position());
  if (i != m_hover) {
    m_hover = i;
    update();
  }
  if (i >= 0 && m_lastQuery >= 0) {
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("'%1' (#%2): click to pin")
                           .arg(m_content.labels.value(i))
                           .arg(m_content.positions[static_cast<std::size_t>(i)]),
                       this);
  } else {
    QToolTip::hideText();
  }
}

void TextView::leaveEvent(QEvent* event) {
  AttentionView::leaveEvent(event);
  if (m_hover >= 0) {
    m_hover = -1;
    update();
  }
}

void TextView::mousePressEvent(QMouseEvent* event) {
  m_pressed = event->button() == Qt::LeftButton ? hit(event->position()) : -1;
}

void TextView::mouseReleaseEvent(QMouseEvent* event) {
  const int i = event->button() == Qt::LeftButton ? hit(event->position()) : -1;
  const int pressed = std::exchange(m_pressed, -1);
  if (i < 0) return;
  const int token = m_content.positions[static_cast<std::size_t>(i)];
  ViewState edited = viewState();
  if (pressed >= 0 && pressed != i) {
    // A drag from one token to another selects every token between them.
    edited.pinnedQuery = m_content.positions[static_cast<std::size_t>(pressed)];
    edited.queryGroup.clear();
    edited.clickQuery(token, false, true);
    edited.pinnedQuery = token;
  } else {
    edited.clickQuery(token, event->modifiers() & Qt::ControlModifier,
                      event->modifiers() & Qt::ShiftModifier);
  }
  Q_EMIT viewStateEdited(edited);
}

std::vector<int> TextView::selectedIndices() const {
  const ViewState& state = viewState();
  std::vector<int> out;
  for (int token : state.selectedQueries()) {
    for (std::size_t i = 0; i < m_content.positions.size(); ++i) {
      if (m_content.positions[i] <= token && token <= m_content.lasts[i]) {
        if (std::find(out.begin(), out.end(), static_cast<int>(i)) == out.end())
          out.push_back(static_cast<int>(i));
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  // The pinned token last: it is the one outlined most strongly.
  for (std::size_t i = 0; i < m_content.positions.size(); ++i) {
    if (m_content.positions[i] <= state.pinnedQuery && state.pinnedQuery <= m_content.lasts[i]) {
      const auto it = std::find(out.begin(), out.end(), static_cast<int>(i));
      if (it != out.end()) std::rotate(it, it + 1, out.end());
    }
  }
  return out;
}

std::vector<double> TextView::shownRow() const {
  const int n = static_cast<int>(m_content.positions.size());
  if (m_content.values.empty() || n == 0) return {};
  std::vector<int> rows = selectedIndices();
  if (rows.empty()) rows = {n - 1};
  const bool sum = viewState().aggregate == QueryAggregate::Sum;
  std::vector<double> out(static_cast<std::size_t>(n), 0.0);
  for (int k = 0; k < n; ++k) {
    for (int q : rows) out[static_cast<std::size_t>(k)] += value(q, k);
    if (!sum) out[static_cast<std::size_t>(k)] /= static_cast<double>(rows.size());
  }
  return out;
}

}  // namespace attnscope::render
