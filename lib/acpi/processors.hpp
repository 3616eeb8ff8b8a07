// SPDX-License-Identifier: Apache-2.0
// Processor devices found in a loaded ACPI namespace, with their _UID, _CPC
// and _PSD evaluated statically.
#pragma once

#include "lib/acpi/aml.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cppc::acpi
{

struct ProcessorDevice
{
    std::string path;             // as ACPI tools print it, e.g. "\\_SB.CPU0"
    std::string internalPath;     // with the 4-character segments
    bool legacyProcessor = false; // a Processor () object, not ACPI0007
    std::optional<std::uint64_t> uid;
    // Each object's evaluation (status absent when the device has none).
    Evaluation uidObject;
    Evaluation cpc;
    Evaluation psd;
    // Everything about this device the reader could not understand: notes
    // of its scope and the scopes inside it, and a _UID that cannot be
    // evaluated or is not an Integer. (A _CPC or _PSD that cannot be
    // evaluated says so in its Evaluation.)
    std::vector<std::string> problems;
};

// Every processor in definition order: Device objects whose _HID is the
// string "ACPI0007", and legacy Processor objects. For a legacy object
// without _UID the processor id stands in as the UID, as Linux does.
std::vector<ProcessorDevice> findProcessors(const Namespace& ns);

// The value in the one-line form the cross-check with ACPICA's acpiexec
// compares: "int:0x17", "buf:820c00...", "str:\"x\"", "pkg[a,b]",
// "other:Reference" (tests/acpi/README.md documents it).
std::string formatValue(const AmlValue& value);

// The line for one object: "absent", "error:<why>" or formatValue().
std::string formatEvaluation(const Evaluation& e);

} // namespace cppc::acpi
