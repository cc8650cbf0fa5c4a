// SPDX-License-Identifier: GPL-3.0-or-later
// SentencePiece `.model` files through libsentencepiece, opened at run time.
//
// Why dlopen: Debian 12's libsentencepiece0 (0.1.97) bundles protobuf-lite 3.14 and exports its
// google::protobuf symbols. LibTorch pulls in the system libprotobuf 3.21; with both linked into
// one process each copy binds to the other's symbols and the process dies in static
// initialisation (ReflectionOps::FindInitializationErrors), or protobuf's version check aborts.
// Opened with RTLD_LOCAL | RTLD_DEEPBIND the library's symbols stay out of the global scope and
// its own references resolve inside it first, so both copies coexist. AddressSanitizer refuses
// RTLD_DEEPBIND; there RTLD_LOCAL alone is used, which is enough unless libprotobuf is already
// loaded (then the tokenizer reports Error(Unavailable) instead of crashing).
//
// Nothing of libsentencepiece is linked, so no call here may make the compiler reference one of
// its symbols: the functions are looked up by their (Itanium ABI) names and called through
// pointers with `this` as the first parameter, the class definitions of sentencepiece_processor.h
// serve only for sizes and return types, and a returned util::Status is built in place in a
// union and destroyed through the library's own destructor.
#include "attnscope/sentencepiece_tokenizer.h"

#include <dlfcn.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <new>
#include <string_view>
#include <system_error>

#include "attnscope/error.h"
#include "attnscope/utf8.h"
#include "io/file_io.h"
#include "tokenizers/piece_labels.h"

#if defined(__SANITIZE_ADDRESS__)
#define ATTNSCOPE_SPM_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNSCOPE_SPM_UNDER_ASAN 1
#endif
#endif

namespace attnscope {

namespace {

namespace spm = sentencepiece;
using PieceView = spm::ImmutableSentencePieceText_ImmutableSentencePiece;

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space

/// The functions of libsentencepiece this file calls, each with `this` first.
struct Library {
  void (*processorConstruct)(void*) = nullptr;
  void (*processorDestroy)(void*) = nullptr;
  spm::util::Status (*loadFromSerializedProto)(void*, std::string_view) = nullptr;
  spm::util::Status (*encodeIds)(const void*, std::string_view, std::vector<int>*) = nullptr;
  spm::util::Status (*encodeText)(const void*, std::string_view, spm::SentencePieceText*) = nullptr;
  int (*pieceSize)(const void*) = nullptr;
  int (*pieceToId)(const void*, std::string_view) = nullptr;
  const std::string& (*idToPiece)(const void*, int) = nullptr;
  bool (*isUnknown)(const void*, int) = nullptr;
  bool (*isControl)(const void*, int) = nullptr;
  bool (*isByte)(const void*, int) = nullptr;
  int (*unkId)(const void*) = nullptr;
  void (*statusDestroy)(void*) = nullptr;
  const char* (*statusMessage)(const void*) = nullptr;
  void (*textConstruct)(void*) = nullptr;
  void (*textDestroy)(void*) = nullptr;
  spm::SentencePieceText* (*textProto)(void*) = nullptr;
  std::size_t (*textPiecesSize)(const void*) = nullptr;
  PieceView (*textPiece)(const void*, int) = nullptr;
  const std::string& (*pieceString)(const void*) = nullptr;
  const std::string& (*pieceSurface)(const void*) = nullptr;
  uint32_t (*pieceId)(const void*) = nullptr;
  uint32_t (*pieceBegin)(const void*) = nullptr;
  uint32_t (*pieceEnd)(const void*) = nullptr;
};

struct OpenedLibrary {
  Library functions;
  std::string error;  // empty when every function was found
};

template <typename Fn>
void bind(void* handle, const char* symbol, Fn& out, std::string& error) {
  void* p = ::dlsym(handle, symbol);
  if (!p) {
    if (error.empty()) error = std::string("libsentencepiece has no symbol ") + symbol;
    return;
  }
  out = reinterpret_cast<Fn>(p);
}

OpenedLibrary openLibrary() {
  OpenedLibrary out;
  int flags = RTLD_NOW | RTLD_LOCAL;
#if defined(RTLD_DEEPBIND) && !defined(ATTNSCOPE_SPM_UNDER_ASAN)
  flags |= RTLD_DEEPBIND;
#else
  if (::dlsym(RTLD_DEFAULT, "_ZN6google8protobuf8internal13VerifyVersionEiiPKc")) {
    out.error =
        "libsentencepiece cannot be opened in this process: libprotobuf is loaded (LibTorch "
        "brings it), and without RTLD_DEEPBIND (refused under AddressSanitizer) the protobuf-lite "
        "bundled in libsentencepiece would bind to it";
    return out;
  }
#endif
  void* handle = nullptr;
  std::string dlError;
  for (const char* name : {"libsentencepiece.so.0",
#ifdef ATTNSCOPE_SENTENCEPIECE_LIBRARY
                           ATTNSCOPE_SENTENCEPIECE_LIBRARY,
#endif
                           "libsentencepiece.so"}) {
    handle = ::dlopen(name, flags);
    if (handle) break;
    if (const char* e = ::dlerror(); e && dlError.empty()) dlError = e;
  }
  if (!handle) {
    out.error = "cannot open libsentencepiece (Debian package libsentencepiece0): " + dlError;
    return out;
  }
  // Never closed: its protobuf copy registers shutdown work that runs at exit.
  Library& f = out.functions;
  std::string& e = out.error;
  bind(handle, "_ZN13sentencepiece22SentencePieceProcessorC1Ev", f.processorConstruct, e);
  bind(handle, "_ZN13sentencepiece22SentencePieceProcessorD1Ev", f.processorDestroy, e);
  bind(handle,
       "_ZN13sentencepiece22SentencePieceProcessor23LoadFromSerializedProtoESt17basic_string_"
       "viewIcSt11char_traitsIcEE",
       f.loadFromSerializedProto, e);
  bind(handle,
       "_ZNK13sentencepiece22SentencePieceProcessor6EncodeESt17basic_string_viewIcSt11char_"
       "traitsIcEEPSt6vectorIiSaIiEE",
       f.encodeIds, e);
  bind(handle,
       "_ZNK13sentencepiece22SentencePieceProcessor6EncodeESt17basic_string_viewIcSt11char_"
       "traitsIcEEPNS_17SentencePieceTextE",
       f.encodeText, e);
  bind(handle, "_ZNK13sentencepiece22SentencePieceProcessor12GetPieceSizeEv", f.pieceSize, e);
  bind(handle,
       "_ZNK13sentencepiece22SentencePieceProcessor9PieceToIdESt17basic_string_viewIcSt11char_"
       "traitsIcEE",
       f.pieceToId, e);
  bind(handle, "_ZNK13sentencepiece22SentencePieceProcessor9IdToPieceB5cxx11Ei", f.idToPiece, e);
  bind(handle, "_ZNK13sentencepiece22SentencePieceProcessor9IsUnknownEi", f.isUnknown, e);
  bind(handle, "_ZNK13sentencepiece22SentencePieceProcessor9IsControlEi", f.isControl, e);
  bind(handle, "_ZNK13sentencepiece22SentencePieceProcessor6IsByteEi", f.isByte, e);
  bind(handle, "_ZNK13sentencepiece22SentencePieceProcessor6unk_idEv", f.unkId, e);
  bind(handle, "_ZN13sentencepiece4util6StatusD1Ev", f.statusDestroy, e);
  bind(handle, "_ZNK13sentencepiece4util6Status13error_messageEv", f.statusMessage, e);
  bind(handle, "_ZN13sentencepiece26ImmutableSentencePieceTextC1Ev", f.textConstruct, e);
  bind(handle, "_ZN13sentencepiece26ImmutableSentencePieceTextD1Ev", f.textDestroy, e);
  bind(handle, "_ZN13sentencepiece26ImmutableSentencePieceText13mutable_protoEv", f.textProto, e);
  bind(handle, "_ZNK13sentencepiece26ImmutableSentencePieceText11pieces_sizeEv", f.textPiecesSize,
       e);
  bind(handle, "_ZNK13sentencepiece26ImmutableSentencePieceText6piecesEi", f.textPiece, e);
  bind(handle,
       "_ZNK13sentencepiece49ImmutableSentencePieceText_ImmutableSentencePiece5pieceB5cxx11Ev",
       f.pieceString, e);
  bind(handle,
       "_ZNK13sentencepiece49ImmutableSentencePieceText_ImmutableSentencePiece7surfaceB5cxx11Ev",
       f.pieceSurface, e);
  bind(handle, "_ZNK13sentencepiece49ImmutableSentencePieceText_ImmutableSentencePiece2idEv",
       f.pieceId, e);
  bind(handle, "_ZNK13sentencepiece49ImmutableSentencePieceText_ImmutableSentencePiece5beginEv",
       f.pieceBegin, e);
  bind(handle, "_ZNK13sentencepiece49ImmutableSentencePieceText_ImmutableSentencePiece3endEv",
       f.pieceEnd, e);
  if (!e.empty()) e += " (attnscope expects the API of sentencepiece 0.1.97)";
  return out;
}

const Library& library() {
  static const OpenedLibrary opened = openLibrary();  // thread-safe, once per process
  if (!opened.error.empty()) throw Error(ErrorKind::Unavailable, opened.error);
  return opened.functions;
}

/// A util::Status a library call returned, built in place (no copy, no destructor of ours).
class LibraryStatus {
 public:
  template <typename Call>
  LibraryStatus(const Library& lib, Call&& call) : m_lib(&lib) {
    ::new (static_cast<void*>(&m_storage.status)) spm::util::Status(call());
  }
  ~LibraryStatus() { m_lib->statusDestroy(&m_storage.status); }
  LibraryStatus(const LibraryStatus&) = delete;
  LibraryStatus& operator=(const LibraryStatus&) = delete;

  bool ok() const { return m_storage.status.ok(); }
  std::string message() const {
    const char* m = m_lib->statusMessage(&m_storage.status);
    return m && *m ? std::string(m) : std::string("unknown error");
  }

 private:
  union Storage {
    Storage() {}
    ~Storage() {}
    spm::util::Status status;
  } m_storage;
  const Library* m_lib;
};

/// An ImmutableSentencePieceText the library fills.
class LibraryText {
 public:
  explicit LibraryText(const Library& lib) : m_lib(&lib) { lib.textConstruct(m_storage); }
  ~LibraryText() { m_lib->textDestroy(m_storage); }
  LibraryText(const LibraryText&) = delete;
  LibraryText& operator=(const LibraryText&) = delete;
  spm::SentencePieceText* proto() { return m_lib->textProto(m_storage); }
  const void* get() const { return m_storage; }

 private:
  alignas(spm::ImmutableSentencePieceText) unsigned char m_storage[sizeof(
      spm::ImmutableSentencePieceText)];
  const Library* m_lib;
};

/// "<0xE2>" -> 0xE2.
std::optional<unsigned char> bytePieceValue(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return std::nullopt;
  unsigned value = 0;
  for (std::size_t i = 3; i < 5; ++i) {
    const char c = piece[i];
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<unsigned>(c - '0');
    } else if (c >= 'A' && c <= 'F') {
      value |= static_cast<unsigned>(c - 'A' + 10);
    } else if (c >= 'a' && c <= 'f') {
      value |= static_cast<unsigned>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
  }
  return static_cast<unsigned char>(value);
}

/// A vocabulary string as the bytes it stands for: "▁" as a space.
std::string spaced(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpace.size(), kSpace) == 0) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

struct Piece {
  int id = 0;
  std::string piece;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::optional<unsigned char> byte;  // a byte-fallback piece
};

}  // namespace

struct SentencePieceTokenizer::Impl {
  explicit Impl(const Library& l) : lib(&l) { lib->processorConstruct(processor); }
  ~Impl() { lib->processorDestroy(processor); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  const void* sp() const { return processor; }
  bool inVocabulary(int64_t id) const { return id >= 0 && id < pieceCount; }

  std::vector<Piece> pieces(const std::string& text) const {
    LibraryText spt(*lib);
    spm::SentencePieceText* proto = spt.proto();
    const LibraryStatus status(*lib, [&] { return lib->encodeText(sp(), text, proto); });
    if (!status.ok())
      throw Error(ErrorKind::Internal,
                  source + ": sentencepiece could not encode the text: " + status.message());
    const std::size_t n = lib->textPiecesSize(spt.get());
    std::vector<Piece> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const PieceView view = lib->textPiece(spt.get(), static_cast<int>(i));
      Piece p;
      p.id = static_cast<int>(lib->pieceId(&view));
      p.piece = lib->pieceString(&view);
      p.begin = lib->pieceBegin(&view);
      p.end = lib->pieceEnd(&view);
      if (inVocabulary(p.id) && lib->isByte(sp(), p.id)) p.byte = bytePieceValue(p.piece);
      // SentencePiece keeps spans in order and inside the text; hold it to that.
      const std::size_t floor = out.empty() ? 0 : out.back().end;
      p.begin = std::min(std::max(p.begin, floor), text.size());
      p.end = std::min(std::max(p.end, p.begin), text.size());
      out.push_back(std::move(p));
    }
    return out;
  }

  const Library* lib;
  std::string source;
  int pieceCount = 0;
  int unkId = -1;
  alignas(spm::SentencePieceProcessor) unsigned char processor[sizeof(spm::SentencePieceProcessor)];
};

SentencePieceTokenizer::SentencePieceTokenizer(std::shared_ptr<const Impl> impl)
    : m_impl(std::move(impl)) {}

SentencePieceTokenizer SentencePieceTokenizer::fromFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found)
    throw Error(ErrorKind::Io, fileErrorMessage("read", path, ENOENT));
  if (ec) throw Error(ErrorKind::Io, fileErrorMessage("read", path, ec.value()));
  if (st.type() != fs::file_type::regular)
    throw Error(
        ErrorKind::Io,
        fileErrorMessage("read", path, st.type() == fs::file_type::directory ? EISDIR : EINVAL));
  const auto tooLarge = [&](uintmax_t size) {
    return Error(ErrorKind::Format, path + ": " + std::to_string(size) +
                                        " bytes is too large for a SentencePiece model (at most " +
                                        std::to_string(kMaxModelBytes) + ")");
  };
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, fileErrorMessage("read", path, ec.value()));
  if (size > kMaxModelBytes) throw tooLarge(size);
  const std::string bytes = readFile(path);  // checks again that it is a regular file
  if (bytes.size() > kMaxModelBytes) throw tooLarge(bytes.size());
  return fromBytes(bytes, path);
}

SentencePieceTokenizer SentencePieceTokenizer::fromBytes(const std::string& serialized,
                                                         const std::string& source) {
  if (serialized.empty())
    throw Error(ErrorKind::Format, source + ": empty file, not a SentencePiece model");
  if (serialized.size() > kMaxModelBytes)
    throw Error(ErrorKind::Format, source + ": too large for a SentencePiece model");
  const Library& lib = library();
  auto impl = std::make_shared<Impl>(lib);
  impl->source = source;
  void* processor = impl->processor;
  const LibraryStatus status(lib,
                             [&] { return lib.loadFromSerializedProto(processor, serialized); });
  if (!status.ok()) {
    const std::string message = status.message();
    std::string reason = message;
    if (message.find("ParseFromArray") != std::string::npos)
      reason = "the bytes do not parse as a ModelProto (truncated, or another kind of file)";
    while (!reason.empty() && (reason.back() == ' ' || reason.back() == '\n')) reason.pop_back();
    std::string text = source + ": not a valid SentencePiece model: " + reason;
    if (reason != message) text += " [sentencepiece: " + message + "]";
    throw Error(ErrorKind::Format, text);
  }
  impl->pieceCount = lib.pieceSize(impl->sp());
  impl->unkId = lib.unkId(impl->sp());
  if (impl->pieceCount <= 0)
    throw Error(ErrorKind::Format, source + ": not a valid SentencePiece model: no pieces");
  return SentencePieceTokenizer(impl);
}

std::vector<Token> SentencePieceTokenizer::encode(const std::string& text) const {
  requireValidUtf8(text, "the text");
  const Impl& m = *m_impl;
  const std::vector<Piece> pieces = m.pieces(text);

  std::vector<Token> out(pieces.size());
  std::vector<std::string> modelBytes(pieces.size());  // what the model sees, for the labels
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    Token& t = out[i];
    t.id = p.id;
    t.unknown = p.id == m.unkId;
    t.byteBegin = p.begin;
    t.byteEnd = p.end;
    t.text = text.substr(p.begin, p.end - p.begin);
    modelBytes[i] = p.byte ? std::string(1, static_cast<char>(*p.byte)) : spaced(p.piece);
  }
  // SentencePiece gives the surface of a byte-fallback character to its last byte piece only
  // (the others are empty at its start). Where the run's bytes are the input bytes unchanged
  // (no normalization touched them), give each byte piece its own byte instead.
  for (std::size_t i = 0; i < pieces.size();) {
    if (!pieces[i].byte) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < pieces.size() && pieces[j].byte && pieces[j].begin == pieces[i].begin) ++j;
    const std::size_t begin = pieces[i].begin;
    const std::size_t end = pieces[j - 1].end;
    std::string run;
    for (std::size_t k = i; k < j; ++k) run += modelBytes[k];
    if (end - begin == run.size() && text.compare(begin, run.size(), run) == 0) {
      for (std::size_t k = i; k < j; ++k) {
        out[k].byteBegin = begin + (k - i);
        out[k].byteEnd = out[k].byteBegin + 1;
        out[k].text = modelBytes[k];
      }
    }
    i = j;
  }
  const std::vector<std::string> labels = pieceLabels(modelBytes);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].label = labels[i];
  return out;
}

std::vector<int64_t> SentencePieceTokenizer::encodeIds(const std::string& text) const {
  requireValidUtf8(text, "the text");
  const Impl& m = *m_impl;
  std::vector<int> ids;
  const LibraryStatus status(*m.lib, [&] { return m.lib->encodeIds(m.sp(), text, &ids); });
  if (!status.ok())
    throw Error(ErrorKind::Internal,
                m.source + ": sentencepiece could not encode the text: " + status.message());
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::size_t SentencePieceTokenizer::vocabSize() const {
  return static_cast<std::size_t>(m_impl->pieceCount);
}

Token SentencePieceTokenizer::tokenOf(int64_t id) const {
  const Impl& m = *m_impl;
  Token t;
  t.id = id;
  if (!m.inVocabulary(id)) {
    t.label = "<id " + std::to_string(id) + ">";
    t.unknown = true;
    return t;
  }
  const int i = static_cast<int>(id);
  const std::string& piece = m.lib->idToPiece(m.sp(), i);
  t.unknown = m.lib->isUnknown(m.sp(), i);
  if (m.lib->isControl(m.sp(), i) || t.unknown) {
    t.text = piece;  // "<s>", "</s>", "<unk>": shown as written
    t.label = readableLabel(piece);
    return t;
  }
  const std::optional<unsigned char> byte =
      m.lib->isByte(m.sp(), i) ? bytePieceValue(piece) : std::nullopt;
  t.text = byte ? std::string(1, static_cast<char>(*byte)) : spaced(piece);
  t.label = readableLabel(t.text);
  return t;
}

std::optional<int64_t> SentencePieceTokenizer::pieceToId(const std::string& piece) const {
  const Impl& m = *m_impl;
  const int id = m.lib->pieceToId(m.sp(), piece);
  if (!m.inVocabulary(id)) return std::nullopt;
  // PieceToId answers the unknown id for strings not in the vocabulary.
  if (id == m.unkId && m.lib->idToPiece(m.sp(), id) != piece) return std::nullopt;
  return id;
}

}  // namespace attnscope
