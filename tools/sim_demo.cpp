// SPDX-License-Identifier: Apache-2.0
#include "sim_demo.hpp"

#include "lib/perf_control.hpp"
#include "lib/sim/layouts.hpp"
#include "lib/sim/pcc_subspace.hpp"
#include "lib/sim/register_file.hpp"
#include "lib/text.hpp"

#include <iomanip>
#include <ostream>
#include <sstream>

namespace cppcgov::tools
{
namespace
{

using cppc::AccessClass;
using cppc::CpcEntry;
using cppc::sim::AccessCounts;
using cppc::sim::PccCounts;

// What one request cost: register-file accesses and PCC commands.
struct Cost
{
    AccessCounts registers;
    PccCounts pcc;
};

std::string describe(const Cost& c)
{
    std::ostringstream s;
    s << c.registers.reads << "r " << c.registers.writes << "w "
      << c.registers.locks << "L";
    if (c.pcc.doorbells != 0)
    {
        s << " " << c.pcc.doorbells << "db";
    }
    return s.str();
}

std::string where(const cppc::CpcDescriptor& d)
{
    const cppc::RegisterDesc& r = d.entry(CpcEntry::desiredPerf).reg;
    std::ostringstream s;
    if (r.inSpace(cppc::AddressSpace::pcc))
    {
        s << "PCC " << unsigned{r.accessSize} << " +" << cppc::hex(r.address);
    }
    else
    {
        s << "mem " << cppc::hex(r.address);
    }
    s << " " << unsigned{r.bitWidth} << "b@" << unsigned{r.bitOffset};
    return s.str();
}

// A request each layout's fields can hold: half the highest performance
// when the table gives it as an Integer.
std::uint64_t demoValue(const cppc::CpcDescriptor& d)
{
    const cppc::CpcValue& h = d.entry(CpcEntry::highestPerf);
    if (h.kind == cppc::CpcValue::Kind::integer && h.integer > 1)
    {
        return h.integer / 2;
    }
    return 100;
}

template <class Control>
Cost measure(Control& control, cppc::sim::RegisterFile& file,
             cppc::sim::PccSubspaces& pcc, unsigned cpu, std::uint64_t value,
             std::error_code& ec)
{
    file.resetCounts();
    pcc.resetCounts();
    ec = control.setPerf(cpu, value);
    return {file.totalCounts(), pcc.counts()};
}

} // namespace

bool runSimDemo(std::string_view name, std::ostream& out)
{
    cppc::sim::Layout layout = cppc::sim::makeLayout(name);
    cppc::sim::RegisterFile file;
    cppc::sim::PccSubspaces pcc;
    for (const auto& s : layout.pccSubspaces)
    {
        pcc.add(s.id, s.payloadBytes);
    }
    const std::string summary = layout.summary;
    const cppc::AccessPlan plan =
        cppc::AccessPlan::build(std::move(layout.cpus));
    cppc::BasicPerfControl<cppc::sim::CountingIo> fast(
        plan, cppc::sim::CountingIo(file), &pcc);
    cppc::BasicConservativePerfControl<cppc::sim::CountingIo> slow(
        plan, cppc::sim::CountingIo(file), &pcc);

    out << "layout " << name << ": " << summary << "\n"
        << "  " << plan.cpuCount() << " CPUs, " << plan.locks().size()
        << " unit lock(s)\n"
        << "  cpu  Desired                  class                  aliases "
           " request  optimised     conservative\n";
    bool ok = true;
    for (unsigned cpu = 0; cpu < plan.cpuCount(); ++cpu)
    {
        const cppc::CpcDescriptor* d = plan.descriptor(cpu);
        if (d == nullptr)
        {
            continue;
        }
        const cppc::RegisterPlan& rp = plan.cpu(cpu).reg(CpcEntry::desiredPerf);
        const std::uint64_t value = demoValue(*d);
        std::error_code fastError;
        std::error_code slowError;
        const Cost f = measure(fast, file, pcc, cpu, value, fastError);
        const Cost s = measure(slow, file, pcc, cpu, value, slowError);
        out << "  " << std::left << std::setw(4) << cpu << " " << std::setw(24)
            << where(*d) << " " << std::setw(22) << cppc::className(rp.access)
            << " " << std::setw(8)
            << (rp.aliases != 0 ? std::to_string(rp.aliases) : "-") << " "
            << std::setw(8) << value << " " << std::setw(13)
            << (fastError ? fastError.message() : describe(f)) << " "
            << (slowError ? slowError.message() : describe(s)) << "\n";
        ok = ok && !fastError && !slowError;
    }
    for (const cppc::Diagnostic& diag : plan.diagnostics())
    {
        out << "  "
            << (diag.severity == cppc::Severity::error ? "error: "
                                                       : "warning: ")
            << diag.message << "\n";
    }
    out << "  (r = register reads, w = writes, L = lock acquisitions, db = "
           "PCC doorbells)\n";
    return ok && !plan.anyRefused();
}

} // namespace cppcgov::tools
