#include "perf_control.hpp"

namespace cppc
{

template class BasicPerfControl<MappedIo>;
template class BasicConservativePerfControl<MappedIo>;

} // namespace cppc
