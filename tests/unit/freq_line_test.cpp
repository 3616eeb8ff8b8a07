// SPDX-License-Identifier: Apache-2.0
#include "lib/freq_line.hpp"

#include <cstdint>
#include <limits>
#include <optional>

#include <gtest/gtest.h>

namespace
{

using cppc::FreqLine;

TEST(FreqLineTest, LinearThroughLowestAndNominal)
{
    // rd-n2 as simulated: 800 -> 1 GHz, 2600 -> 3 GHz.
    const FreqLine line{800, 1'000'000, 2600, 3'000'000};
    EXPECT_EQ(line.khz(800), 1'000'000U);
    EXPECT_EQ(line.khz(2600), 3'000'000U);
    // Halfway in performance is halfway in frequency.
    EXPECT_EQ(line.khz(1700), 2'000'000U);
    // Above nominal (boost) the line goes on: 3300 is 700 x 2000/1800 kHz
    // above 3 GHz, 3777777.7 rounded.
    EXPECT_EQ(line.khz(3300), 3'777'778U);
    // Below lowest too.
    EXPECT_EQ(line.khz(500), 666'667U);
    EXPECT_EQ(line.khz(0), 111'111U);
    // Never below zero.
    const FreqLine steep{100, 100'000, 200, 2'000'000};
    EXPECT_EQ(steep.khz(90), 0U);
    EXPECT_EQ(steep.khz(0), 0U);
}

TEST(FreqLineTest, EqualFrequenciesGoThroughTheOrigin)
{
    const FreqLine line{500, 2'000'000, 1000, 2'000'000};
    EXPECT_EQ(line.khz(1000), 2'000'000U);
    EXPECT_EQ(line.khz(500), 1'000'000U);
    EXPECT_EQ(line.khz(1200), 2'400'000U);
}

TEST(FreqLineTest, UnknownOrBackwardsIsNothing)
{
    EXPECT_EQ(FreqLine{}.khz(100), std::nullopt);
    EXPECT_EQ((FreqLine{10, 0, 100, 3'000'000}).khz(50), std::nullopt);
    EXPECT_EQ((FreqLine{10, 1'000'000, 100, 0}).khz(50), std::nullopt);
    // Nominal frequency below lowest.
    EXPECT_EQ((FreqLine{10, 3'000'000, 100, 1'000'000}).khz(50), std::nullopt);
    // Distinct frequencies but no rise in performance.
    EXPECT_EQ((FreqLine{100, 1'000'000, 100, 3'000'000}).khz(50), std::nullopt);
    EXPECT_EQ((FreqLine{200, 1'000'000, 100, 3'000'000}).khz(50), std::nullopt);
}

TEST(FreqLineTest, TooLargeIsNothing)
{
    const FreqLine line{1, 1'000'000, 2, 4'000'000'000U};
    EXPECT_EQ(line.khz(2), 4'000'000'000U);
    EXPECT_EQ(line.khz(std::numeric_limits<std::uint32_t>::max()),
              std::nullopt);
}

} // namespace
