// Small string helpers for diagnostics (g++ 12 has no std::format).
#pragma once

#include <cstdint>
#include <string>

namespace cppc
{

// "0x1f": lower-case hexadecimal with a 0x prefix.
std::string hex(std::uint64_t value);

} // namespace cppc
