// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnscope/token.h"
#include "attnscope/tokenizer.h"

namespace attnscope {

/// A SentencePiece `.model` file (T5's spiece.model, Marian's source.spm / target.spm, older
/// Llama folders) run by libsentencepiece itself, so ids equal `spm_encode`'s. No BOS/EOS is
/// added (as `spm_encode` without --extra_options). Cheap to copy; thread-safe.
///
/// libsentencepiece is opened at run time (dlopen, its symbols kept local), not linked: Debian's
/// libsentencepiece0 exports the protobuf-lite 3.14 it bundles, and a process that also loads
/// LibTorch's libprotobuf 3.21 crashes before main when both are linked in.
class SentencePieceTokenizer final : public Tokenizer {
 public:
  /// Largest `.model` file read (a 256k-piece vocabulary is a few MB).
  static constexpr std::size_t kMaxModelBytes = 100u << 20;

  /// Throws Error(Io) when the path is missing, not a regular file or unreadable, Error(Format)
  /// when the file is empty, too large or not a model (with SentencePiece's own message), and
  /// Error(Unavailable) when libsentencepiece cannot be opened in this process.
  static SentencePieceTokenizer fromFile(const std::string& path);
  /// A serialized ModelProto (the bytes of a `.model` file); `source` names it in errors.
  static SentencePieceTokenizer fromBytes(const std::string& serialized, const std::string& source);

  /// Tokens with byte spans into the text. `text` is the piece's surface (the input bytes it
  /// covers: leading whitespace SentencePiece folds into "▁" included, whitespace it drops at the
  /// ends not). Byte-fallback pieces (<0xNN>) get one byte each when the run spells the input
  /// bytes unchanged, and are labelled with the character their run spells; a label shows "▁" as
  /// a space ("␣the"). Invalid UTF-8 throws Error(InvalidArgument).
  std::vector<Token> encode(const std::string& text) const override;
  /// The ids alone, exactly as `spm_encode --output_format=id`.
  std::vector<int64_t> encodeIds(const std::string& text) const;
  std::string name() const override { return "sentencepiece"; }

  std::size_t vocabSize() const;
  /// The piece of an id: `text` its bytes ("▁" as a space, <0xNN> as the byte), `label` readable;
  /// ids outside the vocabulary and the unknown piece are marked unknown.
  Token tokenOf(int64_t id) const;
  /// The id of a vocabulary string ("▁the", "<0x0A>", "<unk>"), or nothing when it is not one.
  std::optional<int64_t> pieceToId(const std::string& piece) const;

 private:
  struct Impl;
  explicit SentencePieceTokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> m_impl;
};

}  // namespace attnscope
