// LoadTransformer: the architecture config.json names, from its loader.
#include "hf/architectures.h"
#include "hf/transformer.h"

namespace tokenbatch::hf {

absl::StatusOr<std::unique_ptr<Transformer>> LoadTransformer(const ArchitectureConfig& config,
                                                             const Checkpoint& checkpoint, at::ScalarType dtype,
                                                             at::Device device) {
  switch (config.architecture) {
    case Architecture::kQwen3: return LoadQwen3(config, checkpoint, dtype, device);
    case Architecture::kBert:
    case Architecture::kXlmRoberta: return LoadBert(config, checkpoint, dtype, device);
  }
  return absl::InvalidArgumentError("unknown architecture");
}

}  // namespace tokenbatch::hf
