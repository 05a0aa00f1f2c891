// CRC-32C (Castagnoli), the checksum of TensorFlow's file formats: TFRecord framing (event
// files, tf.data's TFRecordDataset), the tensor bundle of V2 checkpoints, and their SSTable
// index blocks. Internal to the core; not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flowstone::io {

// Extends `crc` (the CRC-32C of earlier bytes, 0 for none) over `size` bytes at `data`.
// Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise: both give the same
// value.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// The CRC-32C of `size` bytes at `data`.
inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

// TensorFlow stores CRCs "masked" (rotated right by 15 bits, plus a constant) so that the CRC
// of data that itself holds CRCs stays well distributed. These are TF's exact formulas.
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace flowstone::io
