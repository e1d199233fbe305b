// FNV-1a: a stable, non-cryptographic 64-bit digest, for names and fingerprints that must stay
// the same across runs (step fingerprints, run specs, trial names, baseline file checksums).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace diagnose {

constexpr uint64_t kFnv1aOffset = 1469598103934665603ull;

// The digest of `bytes`, continuing from `hash` (so that a long input can go in pieces).
uint64_t fnv1a(std::string_view bytes, uint64_t hash = kFnv1aOffset);
// 16 lower-case hex digits.
std::string hex_digest(uint64_t hash);

}  // namespace diagnose
