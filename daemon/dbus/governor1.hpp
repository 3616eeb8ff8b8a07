// SPDX-License-Identifier: Apache-2.0
// The adaptor and proxy classes generated from org.cppcgov.Governor1.xml
// (org::cppcgov::Governor1_adaptor, org::cppcgov::Governor1_proxy), the
// D-Bus names of the interface and its errors, and the error helper every
// handler uses. The generated code does not meet the project's warning
// flags, so they are silenced around it.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "daemon/dbus/governor1_adaptor.h"
#include "daemon/dbus/governor1_proxy.h"
#pragma GCC diagnostic pop

namespace cppcgov::dbus
{

inline constexpr const char* serviceName = "org.cppcgov.Governor1";
inline constexpr const char* objectPath = "/org/cppcgov/Governor1";
inline constexpr const char* interfaceName = "org.cppcgov.Governor1";

// The errors the interface documents.
namespace error
{
inline constexpr const char* invalidArgument =
    "org.cppcgov.Error.InvalidArgument";
inline constexpr const char* notPermitted = "org.cppcgov.Error.NotPermitted";
inline constexpr const char* limitExceeded = "org.cppcgov.Error.LimitExceeded";
inline constexpr const char* noSuchTask = "org.cppcgov.Error.NoSuchTask";
inline constexpr const char* noSuchHandle = "org.cppcgov.Error.NoSuchHandle";
inline constexpr const char* notSupported = "org.cppcgov.Error.NotSupported";
inline constexpr const char* invalidConfig = "org.cppcgov.Error.InvalidConfig";
inline constexpr const char* failed = "org.cppcgov.Error.Failed";
} // namespace error

} // namespace cppcgov::dbus
