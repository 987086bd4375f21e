// What a store's users need to know of its layout without seeing it (store/format.h is private):
// the first record kind a caller may use, and the default blob chunk size.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynrep {

// Kinds below this are the container's own (docs/store-format.md §4); typed records use the rest.
inline constexpr uint16_t kFirstRecordKind = 16;
inline constexpr size_t kDefaultChunkSize = 4u << 20;  // raw bytes per blob chunk

}  // namespace dynrep
