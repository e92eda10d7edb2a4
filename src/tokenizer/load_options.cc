// WithLowercaseFirst (load_options.h).
#include "tokenizer/load_options.h"


namespace tokenbatch::tokenizer::internal {

using nlohmann::json;

json WithLowercaseFirst(const json& normalizer) {
  const json lowercase = {{"type", "Lowercase"}};
  auto is_lowercase = [](const json& n) { return n.is_object() && n.value("type", "") == "Lowercase"; };
  if (is_lowercase(normalizer)) return normalizer;
  json steps = json::array({lowercase});
  if (normalizer.is_object() && normalizer.value("type", "") == "Sequence") {
    const json& inner = normalizer.value("normalizers", json::array());
    for (const json& n : inner) {
      if (is_lowercase(n)) return normalizer;
    }
    for (const json& n : inner) steps.push_back(n);
  } else if (!normalizer.is_null()) {
    steps.push_back(normalizer);
  }
  return json{{"type", "Sequence"}, {"normalizers", std::move(steps)}};
}

}  // namespace tokenbatch::tokenizer::internal
