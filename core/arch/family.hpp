// Architecture families. Each family is one adapter that recognises a checkpoint and builds its ModelView;
// the adapters are listed in one registry, and openModelView() picks the best match.
#pragma once

#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/model_view.hpp"

namespace sharelens {

class FamilyAdapter {
 public:
  virtual ~FamilyAdapter() = default;
  virtual Family family() const = 0;
  // How well this family explains the checkpoint: 0 = not at all; a config.json model_type match scores
  // 100, tensor-name evidence 10..30. The highest score wins.
  virtual int score(const Checkpoint& checkpoint) const = 0;
  virtual ModelView build(const Checkpoint& checkpoint) const = 0;
};

const std::vector<const FamilyAdapter*>& familyAdapters();

// The best-scoring adapter, or nullptr when no family recognises the checkpoint.
const FamilyAdapter* detectFamily(const Checkpoint& checkpoint);

// Detects the family and builds the view. Throws a named Error when no family fits.
ModelView openModelView(const Checkpoint& checkpoint);

// The families' adapters (defined one per file in core/arch/).
const FamilyAdapter& llamaAdapter();
const FamilyAdapter& qwen2Adapter();
const FamilyAdapter& gemma3Adapter();
const FamilyAdapter& gpt2Adapter();
const FamilyAdapter& sharelensAdapter();

// config.json's model_type, looking inside text_config too; empty when absent.
std::string configModelType(const Checkpoint& checkpoint);

}  // namespace sharelens
