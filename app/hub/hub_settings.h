// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace attnscope::hub {

/// Where and how the Hugging Face Hub is reached, read from the environment variables
/// huggingface_hub reads, so that attnscope and the Python tools share one cache and one login.
struct HubSettings {
  /// HF_ENDPOINT without its trailing slash; https://huggingface.co when unset.
  std::string endpoint = "https://huggingface.co";
  /// HF_TOKEN, else the token file `hf auth login` writes ($HF_TOKEN_PATH, else $HF_HOME/token).
  /// Sent as "Authorization: Bearer" to the endpoint only; never printed, logged or put in a
  /// message.
  std::string token;
  /// HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set to 1, ON, YES or TRUE: no request at all.
  bool offline = false;
  /// The hub cache downloads go into: the first of huggingFaceCacheDirs() ($HF_HUB_CACHE, else
  /// $HF_HOME/hub, else ~/.cache/huggingface/hub), the one the model catalogue searches first.
  std::string cacheDir;
  /// HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds): how long a metadata request, and
  /// a transfer that receives nothing, may wait before it counts as a network error.
  int metadataTimeoutMs = 10000;
  int transferTimeoutMs = 30000;

  /// The settings of this process's environment. Throws Error (InvalidArgument) for an endpoint
  /// that is not an http(s) URL or a token with a line break in it (it would end the header).
  static HubSettings fromEnvironment();
};

}  // namespace attnscope::hub
