// SPDX-License-Identifier: Apache-2.0
// From firmware tables to CPC descriptors: finds the processor devices in
// the AML namespace, maps them to logical CPUs (by MADT GICC UIDs or the
// live system's firmware_node/uid), converts each _CPC and _PSD, and checks
// them the way Linux's acpi_cppc_processor_probe does, plus the PCC
// register offsets against the PCCT. Register-level layout checks that need
// the whole machine are AccessPlan's.
#pragma once

#include "lib/acpi/aml.hpp"
#include "lib/acpi/pcct.hpp"
#include "lib/acpi/processors.hpp"
#include "lib/acpi/table.hpp"
#include "lib/cpc_descriptor.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cppc::acpi
{

// Where the logical CPU numbering came from.
enum class CpuNumbering : std::uint8_t
{
    madt,           // enabled GICC entries, in table order
    sysfs,          // /sys/devices/system/cpu/cpuN/firmware_node/uid
    namespaceOrder, // neither was available: processors in AML order
};

std::string_view numberingName(CpuNumbering n) noexcept;

// One logical CPU and what the firmware says about it.
struct FirmwareCpu
{
    unsigned cpu = 0;
    std::uint64_t uid = 0;
    std::string path; // empty when no device has the UID
    std::optional<CpcDescriptor> descriptor;
    // Why the firmware offers no CPPC for this CPU (no processor device has
    // its UID, or the device has no _CPC); empty otherwise. Such a CPU is
    // not refused: there is nothing to refuse.
    std::string noCppc;
    // Reasons the CPU's _CPC or _PSD was refused (each names the CPU).
    std::vector<std::string> errors;
    std::vector<std::string> warnings;
};

// A processor device that is not a present CPU.
struct AbsentDevice
{
    std::string path;
    std::optional<std::uint64_t> uid;
};

struct FirmwareReport
{
    CpuNumbering numbering = CpuNumbering::madt;
    std::vector<FirmwareCpu> cpus;
    std::vector<AbsentDevice> absent;
    std::optional<Pcct> pcct;
    // Problems not tied to one CPU.
    std::vector<std::string> warnings;

    // The descriptors of the CPUs that have one, for AccessPlan::build.
    std::vector<CpcDescriptor> descriptors() const;
};

// Logical CPU n's UID from /sys/devices/system/cpu/cpuN/firmware_node/uid
// under `root`, for n = 0, 1, ... while cpuN exists. Returns nothing when
// there is no such CPU directory or a CPU has no uid file. Throws AcpiError
// when a uid file holds something other than a number.
std::optional<std::vector<std::uint64_t>> sysfsCpuUids(
    const std::filesystem::path& root);

// Reads everything: DSDT and SSDTs (in the given order) into a namespace,
// the PCCT and MADT when present. `cpuUids`, when given, numbers the CPUs
// (logical CPU n has UID cpuUids[n]); otherwise the MADT does, or failing
// that the namespace order. Throws AcpiError for a table that cannot be
// used at all (a damaged MADT or PCCT, no DSDT).
FirmwareReport readFirmware(
    const std::vector<Table>& tables,
    const std::optional<std::vector<std::uint64_t>>& cpuUids = std::nullopt);

// The register a _CPC Buffer element describes: a Generic Register
// descriptor (0x82, length 12) optionally followed by an End Tag. Returns
// nothing when the buffer is anything else.
std::optional<RegisterDesc> parseRegisterBuffer(
    const std::vector<std::uint8_t>& buffer);

} // namespace cppc::acpi
