// SPDX-License-Identifier: Apache-2.0
#include "introspection.hpp"

#include <optional>

namespace cppcgov::test
{
namespace
{

// The value of attribute `key` in the tag text `tag` (what lies between
// '<' and '>'), or nothing when the tag has none.
std::optional<std::string> attribute(std::string_view tag, std::string_view key)
{
    std::size_t at = 0;
    while ((at = tag.find(key, at)) != std::string_view::npos)
    {
        const bool starts =
            at > 0 &&
            (tag[at - 1] == ' ' || tag[at - 1] == '\n' || tag[at - 1] == '\t');
        const std::size_t eq = at + key.size();
        if (!starts || eq >= tag.size() || tag[eq] != '=')
        {
            at = eq;
            continue;
        }
        if (eq + 1 >= tag.size() || (tag[eq + 1] != '"' && tag[eq + 1] != '\''))
        {
            throw std::runtime_error(
                "introspection: attribute " + std::string(key) +
                " without a quoted "
                "value in <" +
                std::string(tag) + ">");
        }
        const char quote = tag[eq + 1];
        const std::size_t end = tag.find(quote, eq + 2);
        if (end == std::string_view::npos)
        {
            throw std::runtime_error("introspection: unterminated value in <" +
                                     std::string(tag) + ">");
        }
        return std::string(tag.substr(eq + 2, end - eq - 2));
    }
    return std::nullopt;
}

bool isTag(std::string_view tag, std::string_view element)
{
    return tag.starts_with(element) &&
           (tag.size() == element.size() || tag[element.size()] == ' ' ||
            tag[element.size()] == '/' || tag[element.size()] == '\n');
}

} // namespace

InterfaceShape parseInterface(std::string_view xml, std::string_view name)
{
    InterfaceShape shape;
    bool inInterface = false;
    bool found = false;
    MethodShape* method = nullptr;
    std::size_t at = 0;
    while ((at = xml.find('<', at)) != std::string_view::npos)
    {
        if (xml.substr(at).starts_with("<!--"))
        {
            const std::size_t end = xml.find("-->", at);
            if (end == std::string_view::npos)
            {
                throw std::runtime_error("introspection: unterminated comment");
            }
            at = end + 3;
            continue;
        }
        const std::size_t end = xml.find('>', at);
        if (end == std::string_view::npos)
        {
            throw std::runtime_error("introspection: unterminated tag");
        }
        const std::string_view tag = xml.substr(at + 1, end - at - 1);
        at = end + 1;
        const bool closes = tag.ends_with('/');
        if (isTag(tag, "interface"))
        {
            inInterface = attribute(tag, "name") == name;
            found = found || inInterface;
        }
        else if (isTag(tag, "/interface"))
        {
            inInterface = false;
        }
        else if (!inInterface)
        {
            continue;
        }
        else if (isTag(tag, "method"))
        {
            const std::optional<std::string> n = attribute(tag, "name");
            if (!n)
            {
                throw std::runtime_error("introspection: a method without a "
                                         "name");
            }
            shape.methods.push_back({*n, ""});
            method = closes ? nullptr : &shape.methods.back();
        }
        else if (isTag(tag, "/method"))
        {
            method = nullptr;
        }
        else if (isTag(tag, "arg") && method != nullptr)
        {
            const std::optional<std::string> type = attribute(tag, "type");
            if (!type)
            {
                throw std::runtime_error("introspection: an argument of " +
                                         method->name + " without a type");
            }
            if (attribute(tag, "direction").value_or("in") == "in")
            {
                method->signature += *type;
            }
        }
        else if (isTag(tag, "property"))
        {
            if (const std::optional<std::string> n = attribute(tag, "name"))
            {
                shape.properties.push_back(*n);
            }
        }
    }
    if (!found)
    {
        throw std::runtime_error(
            "introspection: no interface " + std::string(name));
    }
    return shape;
}

} // namespace cppcgov::test
