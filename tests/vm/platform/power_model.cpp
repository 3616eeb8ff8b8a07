// SPDX-License-Identifier: Apache-2.0
#include "tests/vm/platform/power_model.hpp"

#include <algorithm>

namespace cppcgov::platform
{

namespace
{

constexpr double dynamicPeakWatts = 1.5;
constexpr double leakagePeakWatts = 0.3;
constexpr double lowestVoltage = 0.6; // of the peak, at r = 0

double voltage(double ratio) noexcept
{
    return lowestVoltage + (1.0 - lowestVoltage) * ratio;
}

} // namespace

std::optional<PowerCurve> powerCurveNamed(std::string_view name) noexcept
{
    if (name == "vf")
    {
        return PowerCurve::vf;
    }
    if (name == "linear")
    {
        return PowerCurve::linear;
    }
    return std::nullopt;
}

std::string_view powerCurveName(PowerCurve curve) noexcept
{
    return curve == PowerCurve::vf ? "vf" : "linear";
}

double busyWatts(PowerCurve curve, double ratio) noexcept
{
    const double r = std::clamp(ratio, 0.0, 1.0);
    if (curve == PowerCurve::linear)
    {
        return leakagePeakWatts + dynamicPeakWatts * r;
    }
    const double v = voltage(r);
    return dynamicPeakWatts * r * v * v + leakagePeakWatts * v;
}

double idleWatts(PowerCurve curve, double ratio) noexcept
{
    if (curve == PowerCurve::linear)
    {
        return leakagePeakWatts;
    }
    return leakagePeakWatts * voltage(std::clamp(ratio, 0.0, 1.0));
}

} // namespace cppcgov::platform
