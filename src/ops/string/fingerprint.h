// TensorFlow's string fingerprints: Fingerprint64 (FarmHash's 64-bit fingerprint, the "na"
// variant) and FingerprintCat64, which combines two fingerprints. Hash buckets and crossed
// feature columns must equal TensorFlow's exactly, so that a model trained by one runs on the
// other; tests compare the results with real TensorFlow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace flowstone {

// FarmHash's Fingerprint64 of the bytes of `s` (stable across platforms and releases).
uint64_t Fingerprint64(std::string_view s);

// TensorFlow's FingerprintCat64: a fingerprint of the pair (fp1, fp2), order-dependent.
uint64_t FingerprintCat64(uint64_t fp1, uint64_t fp2);

}  // namespace flowstone
