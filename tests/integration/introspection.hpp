// SPDX-License-Identifier: Apache-2.0
// An interface's shape from D-Bus introspection XML (the Introspect reply):
// its methods with their input signatures, and its properties. For
// bus_fuzz, which must call every method the daemon offers with arguments
// of the right types, and learns them from the daemon rather than from a
// list of its own.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::test
{

struct MethodShape
{
    std::string name;
    std::string signature; // the "in" arguments' types, in order

    bool operator==(const MethodShape&) const = default;
};

struct InterfaceShape
{
    std::vector<MethodShape> methods;
    std::vector<std::string> properties;
};

// The shape of interface `name` in `xml`. Throws std::runtime_error when
// the XML has no such interface or a tag is malformed (unterminated, an
// attribute without a quoted value).
InterfaceShape parseInterface(std::string_view xml, std::string_view name);

} // namespace cppcgov::test
