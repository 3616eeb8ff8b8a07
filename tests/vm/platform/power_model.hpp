// SPDX-License-Identifier: Apache-2.0
// The platform's power model: a CPU's power while busy at a performance
// level and while idle (in WFI), as a function of r = level / highest.
//
// Where the shape comes from: no voltage-frequency table of an Arm server
// core is published that we could find. The one published figure is Arm's
// projection for a Neoverse N1 core with 1 MB of L2 on TSMC 7 nm: up to
// 1.8 W at 3.1 GHz (Arm, 2019; within 10 % of the shipped silicon by Arm's
// later account). Both curves peak there; the rest is an assumption,
// stated as such:
//
//   vf      (the default) CMOS as a DVFS table makes it: the supply voltage
//           rises linearly from 0.6 of its peak at r = 0 to the peak at
//           r = 1, dynamic power is C V^2 f and leakage is proportional to
//           V. Busy: 1.5 W x r x v^2 + 0.3 W x v, with v = 0.6 + 0.4 r.
//           Idle: the leakage alone, 0.3 W x v (WFI gates the clock, not
//           the supply). Convex: running slower saves energy per
//           instruction, so a governor that runs no faster than it must
//           wins.
//   linear  one voltage for every level (frequency scaling alone, as on a
//           part whose levels all sit at its lowest voltage): busy
//           0.3 W + 1.5 W x r, idle 0.3 W. Energy per instruction falls as
//           r rises (the fixed 0.3 W is spread over more work), so racing
//           to idle wins here.
// A conclusion about energy that holds on both is not an artefact of the
// curve.
#pragma once

#include <optional>
#include <string_view>

namespace cppcgov::platform
{

enum class PowerCurve
{
    vf,
    linear,
};

// "vf" or "linear"; nothing for anything else.
[[nodiscard]] std::optional<PowerCurve> powerCurveNamed(
    std::string_view name) noexcept;
[[nodiscard]] std::string_view powerCurveName(PowerCurve curve) noexcept;

// Watts while busy at `ratio` (level / highest, clamped to [0, 1]).
[[nodiscard]] double busyWatts(PowerCurve curve, double ratio) noexcept;
// Watts while idle with the clock at `ratio`.
[[nodiscard]] double idleWatts(PowerCurve curve, double ratio) noexcept;

} // namespace cppcgov::platform
