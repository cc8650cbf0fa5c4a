// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <memory>
#include <string>

#include "attnscope/model.h"

namespace attnscope {

struct FolderParts;

/// Hugging Face causal decoders with rotary or ALiBi positions. Each throws like openGpt2Folder:
/// Error(Io) naming a missing file, Error(Format) naming a malformed one or the field at fault.
/// model_type "llama", "mistral", "qwen2", "qwen3", "gemma" (llama.cpp).
std::shared_ptr<Model> openLlamaFolder(const std::string& folder, const std::string& name);
/// The same from parts given in memory (a GGUF file's config, tokenizer and weights).
std::shared_ptr<Model> openLlamaParts(FolderParts&& parts, const std::string& name);
/// model_type "gpt_neox": Pythia, GPT-NeoX (gpt_neox.cpp).
std::shared_ptr<Model> openGptNeoxFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openGptNeoxParts(FolderParts&& parts, const std::string& name);
/// model_type "bloom" (bloom.cpp).
std::shared_ptr<Model> openBloomFolder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openBloomParts(FolderParts&& parts, const std::string& name);
/// model_type "gemma2", "gemma3_text" and the text model of "gemma3" (gemma2.cpp).
std::shared_ptr<Model> openGemma2Folder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openGemma2Parts(FolderParts&& parts, const std::string& name);
/// model_type "phi3": Phi-3, Phi-3.5, Phi-4-mini (phi3.cpp).
std::shared_ptr<Model> openPhi3Folder(const std::string& folder, const std::string& name);
std::shared_ptr<Model> openPhi3Parts(FolderParts&& parts, const std::string& name);
/// model_type "olmo2": OLMo 2 (olmo2.cpp).
std::shared_ptr<Model> openOlmo2Folder(const std::string& folder, const std::string& name);
/// model_type "phi": Phi-1, Phi-1.5, Phi-2 (phi.cpp).
std::shared_ptr<Model> openPhiFolder(const std::string& folder, const std::string& name);
/// model_type "stablelm": StableLM-3B-4E1T, StableLM 2 (stablelm.cpp).
std::shared_ptr<Model> openStableLmFolder(const std::string& folder, const std::string& name);
/// model_type "olmo": OLMo 1 (olmo.cpp).
std::shared_ptr<Model> openOlmoFolder(const std::string& folder, const std::string& name);
/// model_type "gptj": GPT-J (gptj.cpp).
std::shared_ptr<Model> openGptjFolder(const std::string& folder, const std::string& name);
/// model_type "opt": OPT, Galactica's layout (opt.cpp).
std::shared_ptr<Model> openOptFolder(const std::string& folder, const std::string& name);
/// model_type "gpt_neo": GPT-Neo (gpt_neo.cpp).
std::shared_ptr<Model> openGptNeoFolder(const std::string& folder, const std::string& name);
/// model_type "falcon": Falcon-7B/40B/180B, Falcon 2, Falcon-RW (falcon.cpp).
std::shared_ptr<Model> openFalconFolder(const std::string& folder, const std::string& name);
/// model_type "mixtral", "qwen2_moe", "qwen3_moe" and "olmoe": mixtures of experts on Llama's
/// attention (mixtral.cpp).
std::shared_ptr<Model> openMixtralFolder(const std::string& folder, const std::string& name);

}  // namespace attnscope
