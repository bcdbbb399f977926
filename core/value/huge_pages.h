// Large, freshly allocated arrays (a loaded graph's equations, its
// decompressed bytes) are backed by 2 MiB pages where the kernel offers them
// on request: filling 100 MB of 4 KiB pages costs one page fault per 4 KiB,
// which was a third of loading a million-equation graph.
#pragma once

#include <cstddef>

namespace af {

// Asks the kernel to back the 2 MiB-aligned interior of [p, p + bytes) with
// huge pages when it is next touched (Linux transparent huge pages in
// "madvise" mode; a no-op where they are off, elsewhere, and under 4 MiB).
// Only advice: memory stays ordinary memory, and nothing fails.
void advise_huge_pages(void* p, std::size_t bytes) noexcept;

}  // namespace af
