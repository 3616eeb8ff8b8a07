// SPDX-License-Identifier: Apache-2.0
#include "daemon/machines/registers_state.hpp"

#include "lib/backend/state_file.hpp"
#include "lib/backend/sysfs.hpp"
#include "lib/cpu_list.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <utility>

namespace cppcgov::daemon
{
namespace
{

constexpr std::string_view stateHeader = "cppcgov-registers-state 1";
constexpr std::string_view cpuPrefix = "cpu";
constexpr std::string_view hexPrefix = "0x";

std::string hex(std::uint64_t value)
{
    std::array<char, 16> digits{};
    const auto end =
        std::to_chars(digits.data(), digits.data() + digits.size(), value, 16)
            .ptr;
    return std::string(hexPrefix) + std::string(digits.data(), end);
}

std::optional<std::uint64_t> parseHex(std::string_view text) noexcept
{
    if (!text.starts_with(hexPrefix) || text.size() == hexPrefix.size())
    {
        return std::nullopt;
    }
    text.remove_prefix(hexPrefix.size());
    std::uint64_t value = 0;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (ec != std::errc() || end != text.data() + text.size())
    {
        return std::nullopt;
    }
    return value;
}

std::optional<cppc::CpcEntry> savedEntryNamed(std::string_view name) noexcept
{
    const auto* it = std::find_if(savedEntries.begin(), savedEntries.end(),
                                  [name](cppc::CpcEntry e) {
        return cppc::entryName(e) == name;
    });
    return it == savedEntries.end() ? std::nullopt
                                    : std::optional<cppc::CpcEntry>(*it);
}

// The line's four space-separated fields, when it has exactly four.
std::optional<std::array<std::string_view, 4>> fieldsOf(std::string_view line)
{
    std::array<std::string_view, 4> fields;
    for (std::size_t i = 0; i < fields.size(); ++i)
    {
        const std::size_t sp = line.find(' ');
        const bool last = i + 1 == fields.size();
        if (last != (sp == std::string_view::npos) || line.empty())
        {
            return std::nullopt;
        }
        fields[i] = line.substr(0, sp);
        if (fields[i].empty())
        {
            return std::nullopt;
        }
        line = last ? std::string_view() : line.substr(sp + 1);
    }
    return fields;
}

} // namespace

std::filesystem::path registersStateFile(const std::filesystem::path& stateDir)
{
    return stateDir / "registers.state";
}

std::string registersRecord(std::uint32_t cpu)
{
    return std::string(cpuPrefix) + std::to_string(cpu);
}

std::string formatRegistersState(const std::vector<SavedRegister>& saved)
{
    std::string out(stateHeader);
    out += '\n';
    for (const SavedRegister& s : saved)
    {
        out += registersRecord(s.cpu) + ' ' +
               std::string(cppc::entryName(s.entry)) + ' ' + hex(s.address) +
               ' ' + std::to_string(s.value) + '\n';
    }
    return out;
}

std::vector<SavedRegister> parseRegistersState(
    std::string_view text, const std::filesystem::path& file)
{
    std::vector<SavedRegister> saved;
    std::set<std::pair<std::uint32_t, cppc::CpcEntry>> seen;
    for (const std::string_view line :
         cppc::backend::stateLines(text, stateHeader, file))
    {
        const auto bad = [&file, line](std::string_view why) {
            cppc::backend::badStateFile(file, "line '" + std::string(line) +
                                                  "': " + std::string(why));
        };
        const auto fields = fieldsOf(line);
        if (!fields)
        {
            bad("not 'cpu<N> <entry> <address> <value>'");
        }
        const auto& [cpuText, entryText, addressText, valueText] = *fields;
        const auto cpu =
            cpuText.starts_with(cpuPrefix)
                ? cppc::backend::parseDecimal(cpuText.substr(cpuPrefix.size()))
                : std::nullopt;
        if (!cpu || *cpu >= cppc::maxCpus)
        {
            bad("no CPU number below " + std::to_string(cppc::maxCpus));
        }
        const auto entry = savedEntryNamed(entryText);
        if (!entry)
        {
            bad("not a control register the backend saves");
        }
        const auto address = parseHex(addressText);
        if (!address)
        {
            bad("the address is not hexadecimal");
        }
        const auto value = cppc::backend::parseDecimal(valueText);
        if (!value)
        {
            bad("the value is not a decimal number");
        }
        const auto c = static_cast<std::uint32_t>(*cpu);
        if (!seen.emplace(c, *entry).second)
        {
            bad("the register appears twice");
        }
        saved.push_back({c, *entry, *address, *value});
    }
    return saved;
}

} // namespace cppcgov::daemon
