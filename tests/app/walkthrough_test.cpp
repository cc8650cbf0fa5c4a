// SPDX-License-Identifier: GPL-3.0-or-later
// Issue 32: the window walked through as a new user would, with real model folders. Every tab with
// a BERT, a Llama (grouped-query attention), a Mixtral (the Experts view), a T5 and the bundled
// model, at a classroom's 1024×700 and a desk's 1600×1000, in the light and the dark theme: each
// view is drawn into a PaintAudit and must show something, keep its labels inside their boxes and
// off each other, and keep WCAG AA contrast; each visible label and button of the window must hold
// its text.
// ATTNSCOPE_SCREENSHOTS=<folder> also saves every window it checks there (out of the repository).
#include <QAbstractButton>
#include <QAbstractScrollArea>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QPainter>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <functional>

#include "attention_view.h"
#include "document.h"
#include "hf_test_folder.h"
#include "main_window.h"
#include "paint_audit.h"
#include "pipeline_view.h"
#include "theme.h"
#include "view_tabs.h"

using attnscope::gui::Document;
using attnscope::gui::MainWindow;
using attnscope::gui::Theme;
using attnscope::render::ViewKind;
using attnscope::test::PaintAudit;
using Shapes = std::map<std::string, std::vector<int64_t>>;

namespace {

constexpr int64_t kWidth = 32;

void linear(Shapes& s, const std::string& name, int64_t out, int64_t in, bool bias = true) {
  s[name + ".weight"] = {out, in};
  if (bias) s[name + ".bias"] = {out};
}
void layerNorm(Shapes& s, const std::string& name) {
  s[name + ".weight"] = {kWidth};
  s[name + ".bias"] = {kWidth};
}

/// bert-base's layout at a small width: WordPiece with [CLS] and [SEP], 2 layers, 4 heads.
std::string writeBert(const QString& folder) {
  constexpr int64_t vocab = 1000, positions = 64;
  const nlohmann::json config = {{"model_type", "bert"},
                                 {"vocab_size", vocab},
                                 {"hidden_size", kWidth},
                                 {"num_hidden_layers", 2},
                                 {"num_attention_heads", 4},
                                 {"intermediate_size", 64},
                                 {"max_position_embeddings", positions}};
  Shapes s;
  s["embeddings.word_embeddings.weight"] = {vocab, kWidth};
  s["embeddings.position_embeddings.weight"] = {positions, kWidth};
  s["embeddings.token_type_embeddings.weight"] = {2, kWidth};
  layerNorm(s, "embeddings.LayerNorm");
  for (int l = 0; l < 2; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"})
      linear(s, p + m, kWidth, kWidth);
    layerNorm(s, p + "attention.output.LayerNorm");
    linear(s, p + "intermediate.dense", 64, kWidth);
    linear(s, p + "output.dense", kWidth, 64);
    layerNorm(s, p + "output.LayerNorm");
  }
  return attnscope::test::writeHfFolderAt(folder.toStdString(), config, s, 7, 0.4f,
                                          "wordpiece.json");
}

/// Llama's layout with grouped-query attention: 8 query heads share 2 key/value heads.
std::string writeLlama(const QString& folder) {
  constexpr int64_t vocab = 301, inner = 64;
  const nlohmann::json config = {
      {"model_type", "llama"},      {"vocab_size", vocab},           {"hidden_size", kWidth},
      {"intermediate_size", inner}, {"num_hidden_layers", 3},        {"num_attention_heads", 8},
      {"num_key_value_heads", 2},   {"max_position_embeddings", 64}, {"tie_word_embeddings", true}};
  Shapes s = {{"model.embed_tokens.weight", {vocab, kWidth}}, {"model.norm.weight", {kWidth}}};
  for (int l = 0; l < 3; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = {kWidth};
    s[p + "post_attention_layernorm.weight"] = {kWidth};
    linear(s, p + "self_attn.q_proj", kWidth, kWidth, false);
    linear(s, p + "self_attn.k_proj", 8, kWidth, false);
    linear(s, p + "self_attn.v_proj", 8, kWidth, false);
    linear(s, p + "self_attn.o_proj", kWidth, kWidth, false);
    linear(s, p + "mlp.gate_proj", inner, kWidth, false);
    linear(s, p + "mlp.up_proj", inner, kWidth, false);
    linear(s, p + "mlp.down_proj", kWidth, inner, false);
  }
  return attnscope::test::writeHfFolderAt(folder.toStdString(), config, s, 8, 0.4f,
                                          "wordlevel.json");
}

/// Mixtral's layout at a small width: 4 experts, 2 chosen per token, GQA.
std::string writeMixtral(const QString& folder) {
  constexpr int64_t vocab = 301, inner = 24, experts = 4;
  const nlohmann::json config = {
      {"model_type", "mixtral"},    {"vocab_size", vocab},           {"hidden_size", kWidth},
      {"intermediate_size", inner}, {"num_hidden_layers", 4},        {"num_attention_heads", 4},
      {"num_key_value_heads", 2},   {"max_position_embeddings", 64}, {"num_local_experts", experts},
      {"num_experts_per_tok", 2},   {"tie_word_embeddings", true}};
  Shapes s = {{"model.embed_tokens.weight", {vocab, kWidth}}, {"model.norm.weight", {kWidth}}};
  for (int l = 0; l < 4; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s[p + "input_layernorm.weight"] = {kWidth};
    s[p + "post_attention_layernorm.weight"] = {kWidth};
    linear(s, p + "self_attn.q_proj", kWidth, kWidth, false);
    linear(s, p + "self_attn.k_proj", 16, kWidth, false);
    linear(s, p + "self_attn.v_proj", 16, kWidth, false);
    linear(s, p + "self_attn.o_proj", kWidth, kWidth, false);
    linear(s, p + "block_sparse_moe.gate", experts, kWidth, false);
    for (int e = 0; e < experts; ++e) {
      const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
      linear(s, x + "w1", inner, kWidth, false);
      linear(s, x + "w3", inner, kWidth, false);
      linear(s, x + "w2", kWidth, inner, false);
    }
  }
  return attnscope::test::writeHfFolderAt(folder.toStdString(), config, s, 10, 0.6f,
                                          "wordlevel.json");
}

/// T5 v1.1's layout (gated GELU, relative bias in the first block), SentencePiece Unigram.
std::string writeT5(const QString& folder) {
  constexpr int64_t vocab = 800, heads = 4, kv = 8, ff = 64, buckets = 32;
  const nlohmann::json config = {{"model_type", "t5"},
                                 {"vocab_size", vocab},
                                 {"d_model", kWidth},
                                 {"d_kv", kv},
                                 {"d_ff", ff},
                                 {"num_layers", 2},
                                 {"num_decoder_layers", 2},
                                 {"num_heads", heads},
                                 {"relative_attention_num_buckets", buckets},
                                 {"feed_forward_proj", "gated-gelu"},
                                 {"tie_word_embeddings", true},
                                 {"decoder_start_token_id", 0},
                                 {"eos_token_id", 2}};
  Shapes s = {
      {"shared.weight", {vocab, kWidth}},
      {"encoder.final_layer_norm.weight", {kWidth}},
      {"decoder.final_layer_norm.weight", {kWidth}},
      {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", {buckets, heads}},
      {"decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", {buckets, heads}}};
  for (const bool decoder : {false, true}) {
    for (int l = 0; l < 2; ++l) {
      const std::string p =
          std::string(decoder ? "decoder" : "encoder") + ".block." + std::to_string(l) + ".layer.";
      std::vector<std::string> attention = {p + "0.SelfAttention."};
      if (decoder) attention.push_back(p + "1.EncDecAttention.");
      for (std::size_t i = 0; i < attention.size(); ++i) {
        s[p + std::to_string(i) + ".layer_norm.weight"] = {kWidth};
        for (const char* m : {"q", "k", "v"})
          s[attention[i] + m + ".weight"] = {heads * kv, kWidth};
        s[attention[i] + "o.weight"] = {kWidth, heads * kv};
      }
      const std::string f = p + std::to_string(attention.size()) + ".";
      s[f + "layer_norm.weight"] = {kWidth};
      s[f + "DenseReluDense.wi_0.weight"] = {ff, kWidth};
      s[f + "DenseReluDense.wi_1.weight"] = {ff, kWidth};
      s[f + "DenseReluDense.wo.weight"] = {kWidth, ff};
    }
  }
  return attnscope::test::writeHfFolderAt(folder.toStdString(), config, s, 9, 0.4f, "unigram.json");
}

/// A visible label or button whose text does not fit the space the layout gave it.
QStringList widgetsThatCutTheirText(QWidget* window) {
  QStringList out;
  for (QLabel* l : window->findChildren<QLabel*>()) {
    if (!l->isVisible() || l->wordWrap() || l->text().isEmpty() || !l->pixmap().isNull()) continue;
    if (Qt::mightBeRichText(l->text())) continue;  // measured by its document, not a line
    const int needed = l->fontMetrics().horizontalAdvance(l->text());
    if (needed > l->contentsRect().width() + 1)
      out << QStringLiteral("label '%1' needs %2 px, has %3")
                 .arg(l->text().left(40))
                 .arg(needed)
                 .arg(l->contentsRect().width());
  }
  for (QAbstractButton* b : window->findChildren<QAbstractButton*>()) {
    if (!b->isVisible() || b->text().isEmpty()) continue;
    if (b->sizeHint().width() > b->width() + 1)
      out << QStringLiteral("%1 '%2' needs %3 px, has %4")
                 .arg(QString::fromLatin1(b->metaObject()->className()), b->text())
                 .arg(b->sizeHint().width())
                 .arg(b->width());
  }
  return out;
}

/// Where `root` scrolls, in its own pixels: text half out of these is half scrolled into sight.
/// Scroll areas, and the views that scroll on their own (the pipeline, Compare).
QList<QRectF> scrollingViewports(QWidget* root) {
  QList<QRectF> out;
  const auto add = [&](QWidget* w, const QRectF& r) {
    if (w->isVisible()) out << r.translated(w->mapTo(root, QPoint(0, 0)));
  };
  for (QAbstractScrollArea* area : root->findChildren<QAbstractScrollArea*>())
    add(area->viewport(), QRectF(QPointF(0, 0), area->viewport()->size()));
  QList<attnscope::render::PipelineView*> pipelines =
      root->findChildren<attnscope::render::PipelineView*>();
  if (auto* self = qobject_cast<attnscope::render::PipelineView*>(root)) pipelines << self;
  for (auto* pipeline : pipelines) add(pipeline, pipeline->screenFrame().viewport);
  for (auto* scroll : root->findChildren<QScrollBar*>(QStringLiteral("compareScroll")))
    if (scroll->isVisible())  // Compare's canvas, the bar's height from the view's left edge
      add(scroll->parentWidget(),
          QRectF(0, 0, scroll->geometry().right() + 1, scroll->geometry().bottom() + 1));
  return out;
}

/// The ink of disabled controls, which WCAG exempts from contrast.
QList<QColor> inactiveInks() {
  const QPalette p = QApplication::palette();
  return {p.color(QPalette::Disabled, QPalette::WindowText),
          p.color(QPalette::Disabled, QPalette::ButtonText),
          p.color(QPalette::Disabled, QPalette::Text),
          p.color(QPalette::Disabled, QPalette::PlaceholderText)};
}

}  // namespace

class WalkthroughTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    // Folder names as a user's would read in the window.
    m_bert = QString::fromStdString(writeBert(m_dir.filePath(QStringLiteral("bert-small"))));
    m_llama = QString::fromStdString(writeLlama(m_dir.filePath(QStringLiteral("llama-gqa"))));
    m_t5 = QString::fromStdString(writeT5(m_dir.filePath(QStringLiteral("t5-small-v1_1"))));
    m_mixtral = QString::fromStdString(writeMixtral(m_dir.filePath(QStringLiteral("mixtral-4x"))));
  }

  // The audit itself can fail: a label wider than its box, two labels on each other, a label laid
  // over with a fill and pale text are each reported, and a well-drawn label is not.
  void theAuditSeesWhatAReaderWould() {
    const auto audit = [](const std::function<void(QPainter&)>& draw) {
      PaintAudit device(QSize(300, 200));
      {
        QPainter p(&device);
        p.fillRect(QRect(0, 0, 300, 200), Qt::white);
        draw(p);
      }
      return device.problems(Qt::white);
    };
    const QStringList fine = audit([](QPainter& p) {
      p.setPen(Qt::black);
      p.drawText(QRect(10, 10, 200, 30), Qt::AlignCenter, QStringLiteral("layer 0, head 0"));
      p.fillRect(QRect(10, 60, 100, 30), QColor(68, 1, 84));  // viridis' darkest
      p.setPen(Qt::white);
      p.drawText(QRect(10, 60, 100, 30), Qt::AlignCenter, QStringLiteral("0.42"));
    });
    QVERIFY2(fine.isEmpty(), qPrintable(fine.join(QLatin1Char('\n'))));
    const QStringList cut = audit([](QPainter& p) {
      p.setPen(Qt::black);
      p.drawText(QRect(10, 10, 30, 20), Qt::AlignLeft, QStringLiteral("post_attention_layernorm"));
    });
    QVERIFY2(cut.size() == 1 && cut[0].startsWith(QStringLiteral("cut")),
             qPrintable(cut.join(QLatin1Char('\n'))));
    const QStringList overlap = audit([](QPainter& p) {
      p.setPen(Qt::black);
      p.drawText(QPointF(10, 50), QStringLiteral("query"));
      p.drawText(QPointF(14, 52), QStringLiteral("key"));
    });
    QVERIFY2(overlap.size() == 1 && overlap[0].startsWith(QStringLiteral("overlap")),
             qPrintable(overlap.join(QLatin1Char('\n'))));
    const QStringList covered = audit([](QPainter& p) {
      p.setPen(Qt::black);
      p.drawText(QPointF(10, 50), QStringLiteral("head 1"));
      p.fillRect(QRectF(20, 38, 60, 16), Qt::white);  // an arrow label's backing laid on it
    });
    QVERIFY2(covered.size() == 1 && covered[0].startsWith(QStringLiteral("covered")),
             qPrintable(covered.join(QLatin1Char('\n'))));
    const QStringList pale = audit([](QPainter& p) {
      p.fillRect(QRect(10, 60, 100, 30), QColor(253, 231, 37));  // viridis' brightest
      p.setPen(Qt::white);
      p.drawText(QRect(10, 60, 100, 30), Qt::AlignCenter, QStringLiteral("sat"));
    });
    QVERIFY2(pale.size() == 1 && pale[0].startsWith(QStringLiteral("contrast")),
             qPrintable(pale.join(QLatin1Char('\n'))));
  }

  void everyViewAtBothSizesAndThemes_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("text");
    QTest::newRow("bundled") << QStringLiteral("default")
                             << QStringLiteral(
                                    "First Citizen: Before we proceed any further, "
                                    "hear me speak.");
    QTest::newRow("bert") << QStringLiteral("bert")
                          << QStringLiteral("the cat sat on the [MASK] . it was tired");
    QTest::newRow("llama") << QStringLiteral("llama")
                           << QStringLiteral("the cat sat on the mat because it was tired");
    QTest::newRow("mixtral") << QStringLiteral("mixtral")
                             << QStringLiteral("the cat sat on the mat because it was tired");
    QTest::newRow("t5") << QStringLiteral("t5")
                        << QStringLiteral("translate English to German: the house is wonderful.");
  }

  void everyViewAtBothSizesAndThemes() {
    QFETCH(QString, model);
    QFETCH(QString, text);
    const QString source = model == QLatin1String("bert")      ? m_bert
                           : model == QLatin1String("llama")   ? m_llama
                           : model == QLatin1String("t5")      ? m_t5
                           : model == QLatin1String("mixtral") ? m_mixtral
                                                               : model;
    Document doc;
    MainWindow window(&doc, nullptr);
    QSignalSpy results(&doc, &Document::resultChanged);
    window.start({QString(), text, source, std::nullopt});
    QTRY_VERIFY_WITH_TIMEOUT(results.count() >= 1 && doc.result(), 30000);
    QVERIFY2(window.bannerMessage().isEmpty() || !window.bannerMessage().contains("error"),
             qPrintable(window.bannerMessage()));
    auto* tabs = window.findChild<attnscope::gui::ViewTabs*>();
    QVERIFY(tabs);
    const QString shots = qEnvironmentVariable("ATTNSCOPE_SCREENSHOTS");
    if (!shots.isEmpty()) QDir().mkpath(shots);
    QStringList problems;
    for (const Theme theme : {Theme::Light, Theme::Dark}) {
      window.setTheme(theme);
      for (const QSize size : {QSize(1024, 700), QSize(1600, 1000)}) {
        // The first head at the small size, a later layer's second head at the large one: the
        // views lay out differently around another selection (the pipeline's lanes move).
        const bool large = size.width() > 1024;
        doc.selectHead(large ? doc.result()->group().layers() - 1 : 0, large ? 1 : 0);
        window.resize(size);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        for (int i = 0; i < tabs->count(); ++i) {
          tabs->setCurrentIndex(i);
          auto* view = window.currentView();
          QVERIFY(view);
          QApplication::processEvents();
          QTRY_VERIFY_WITH_TIMEOUT(view->result() != nullptr, 20000);
          // The lens is computed once its tab is open: the decoders' run comes back with it.
          if (view->kind() == ViewKind::LogitLens && model != QLatin1String("bert") &&
              model != QLatin1String("t5"))
            QTRY_VERIFY_WITH_TIMEOUT(!view->result()->logitLensIds.data.empty(), 20000);
          QApplication::processEvents();
          const QString where = QStringLiteral("%1 %2 %3x%4 %5: ")
                                    .arg(model, attnscope::gui::toString(theme))
                                    .arg(size.width())
                                    .arg(size.height())
                                    .arg(attnscope::render::toString(view->kind()));
          const QColor page = QApplication::palette().color(QPalette::Base);
          for (const QString& p : widgetsThatCutTheirText(&window)) problems << where + p;
          // The whole window as painted: the text panel, model panel, bars and tabs too.
          PaintAudit whole(window.size());
          window.render(&whole);
          for (const QString& p : whole.problems(page, scrollingViewports(&window), inactiveInks()))
            problems << where + QStringLiteral("window ") + p;
          // What the user sees: the view widget with its children (plot, table, control bar).
          PaintAudit screen(view->size());
          view->render(&screen);
          if (!screen.showsSomething(page)) problems << where + QStringLiteral("empty");
          for (const QString& p : screen.problems(page, scrollingViewports(view), inactiveInks()))
            problems << where + QStringLiteral("screen ") + p;
          // What an export of the view's size holds, in the window's colours.
          const QString title = window.defaultTitle();
          const QSize exportSize = view->legibleExportSize(view->size(), title, true);
          PaintAudit exported(exportSize);
          {
            QPainter painter(&exported);
            view->renderTo(painter, QRect(QPoint(0, 0), exportSize), title, true);
          }
          for (const QString& p : exported.problems(page))
            problems << where + QStringLiteral("export ") + p;
          // The pipeline's lanes and labels move with the width: a few more pages of it.
          if (view->kind() == ViewKind::Pipeline) {
            for (const int width : {700, 850, 1000, 1150}) {
              const QSize asked(width, 700);
              PaintAudit other(view->legibleExportSize(asked, title, true));
              {
                QPainter painter(&other);
                view->renderTo(painter, QRect(QPoint(0, 0), other.size()), title, true);
              }
              for (const QString& p : other.problems(page))
                problems << where + QStringLiteral("export %1 px wide ").arg(width) + p;
            }
          }
          if (!shots.isEmpty())
            window.grab().save(shots + QStringLiteral("/%1-%2-%3x%4-%5.png")
                                           .arg(model, attnscope::gui::toString(theme))
                                           .arg(size.width())
                                           .arg(size.height())
                                           .arg(attnscope::render::toString(view->kind())));
        }
      }
    }
    window.setTheme(Theme::System);
    problems.removeDuplicates();
    const QString report =
        qEnvironmentVariable("ATTNSCOPE_WALK_REPORT");  // every problem, a line each
    if (!report.isEmpty()) {
      QFile f(report);
      if (f.open(QIODevice::Append | QIODevice::Text))
        f.write((problems.join(QLatin1Char('\n')) + QLatin1Char('\n')).toUtf8());
    }
    QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("%1 problems:\n").arg(problems.size()) +
                                            problems.mid(0, 60).join(QLatin1Char('\n'))));
  }

 private:
  QTemporaryDir m_dir;
  QString m_bert, m_llama, m_t5, m_mixtral;
};

QTEST_MAIN(WalkthroughTest)
#include "walkthrough_test.moc"
