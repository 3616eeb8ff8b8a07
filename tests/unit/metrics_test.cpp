// SPDX-License-Identifier: Apache-2.0
#include "daemon/latency_histogram.hpp"
#include "daemon/metrics.hpp"
#include "daemon/prometheus_text.hpp"
#include "daemon/tick_health.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace cppcgov::daemon
{
namespace
{

MetricsSnapshot oneCpu()
{
    MetricsSnapshot s;
    s.version = "1.2";
    s.backend = "simulator:rd-n2";
    s.policy = "schedutil";
    s.samplingSource = "procfs";
    MetricsCpu cpu;
    cpu.cpu = 3;
    cpu.requestedPerf = 600;
    cpu.deliveredPerf = 550;
    cpu.requestedKhz = 1'800'000;
    cpu.util = 512;
    cpu.clamp = {256, 1024};
    cpu.reason = policies::Reason::clampMin;
    cpu.degraded = true;
    s.cpus.push_back(cpu);
    s.domains.push_back({7, 1, 600, {}});
    s.domains.back().firmwareFindings[static_cast<std::size_t>(
        cppc::SanityCheck::counterRate)] = true;
    s.clampHints = 2;
    s.latencyHints = 1;
    s.tickLateness = {{0.001}, {4}, 5, 0.0125};
    s.hintToWrite = {{0.5}, {0}, 0, 0};
    s.energyHints = 3;
    s.cpus[0].desiredExcursions = 7;
    s.cpus[0].minimumExcursions = 2;
    s.ticks = 100;
    s.ticksSkipped = 5;
    s.writes = 40;
    s.writeErrors = 1;
    s.accessErrors = 2;
    s.processCpuSeconds = 1.5;
    s.processResidentBytes = 4096;
    return s;
}

TEST(Metrics, RendersTheExactText)
{
    const std::string expected =
        "# HELP cppcgov_info cppcgovd's version, backend and default policy "
        "(always 1).\n"
        "# TYPE cppcgov_info gauge\n"
        "cppcgov_info{version=\"1.2\",backend=\"simulator:rd-n2\","
        "policy=\"schedutil\"} 1\n"
        "# HELP cppcgov_sampling_source Where the load comes from: 1 for the "
        "source in use (bpf: the scheduler's events; procfs: /proc/stat).\n"
        "# TYPE cppcgov_sampling_source gauge\n"
        "cppcgov_sampling_source{source=\"bpf\"} 0\n"
        "cppcgov_sampling_source{source=\"procfs\"} 1\n"
        "# HELP cppcgov_cpu_requested_perf Performance requested for the CPU, "
        "in the firmware's abstract units (CPPC Desired Performance).\n"
        "# TYPE cppcgov_cpu_requested_perf gauge\n"
        "cppcgov_cpu_requested_perf{cpu=\"3\"} 600\n"
        "# HELP cppcgov_cpu_delivered_perf Performance the CPU delivered over "
        "the last tick, in the firmware's abstract units (0 when unknown).\n"
        "# TYPE cppcgov_cpu_delivered_perf gauge\n"
        "cppcgov_cpu_delivered_perf{cpu=\"3\"} 550\n"
        "# HELP cppcgov_cpu_requested_khz Performance requested for the CPU, "
        "in kHz (only where the firmware gives the CPU's frequencies).\n"
        "# TYPE cppcgov_cpu_requested_khz gauge\n"
        "cppcgov_cpu_requested_khz{cpu=\"3\"} 1800000\n"
        "# HELP cppcgov_cpu_delivered_khz Performance the CPU delivered over "
        "the last tick, in kHz (only where the firmware gives the CPU's "
        "frequencies).\n"
        "# TYPE cppcgov_cpu_delivered_khz gauge\n"
        "# HELP cppcgov_cpu_utilization_ratio The CPU's averaged "
        "utilization, 0 to 1.\n"
        "# TYPE cppcgov_cpu_utilization_ratio gauge\n"
        "cppcgov_cpu_utilization_ratio{cpu=\"3\"} 0.5\n"
        "# HELP cppcgov_cpu_clamp_min_ratio The util_min of the clamps active "
        "on the CPU, 0 to 1.\n"
        "# TYPE cppcgov_cpu_clamp_min_ratio gauge\n"
        "cppcgov_cpu_clamp_min_ratio{cpu=\"3\"} 0.25\n"
        "# HELP cppcgov_cpu_clamp_max_ratio The util_max of the clamps active "
        "on the CPU, 0 to 1 (1 when other work lifts the ceiling).\n"
        "# TYPE cppcgov_cpu_clamp_max_ratio gauge\n"
        "cppcgov_cpu_clamp_max_ratio{cpu=\"3\"} 1\n"
        "# HELP cppcgov_cpu_reason Why the CPU's request is what it is: 1 for "
        "the current reason, 0 for the others.\n"
        "# TYPE cppcgov_cpu_reason gauge\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"utilization\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"clamp-min\"} 1\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"clamp-max\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"floor\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"ceiling\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"rate-limited\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"burst\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"fixed\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"autonomous\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"desired-excursion\"} 0\n"
        "cppcgov_cpu_reason{cpu=\"3\",reason=\"minimum-excursion\"} 0\n"
        "# HELP cppcgov_cpu_excursions_total Ticks in which the platform's "
        "PerformanceLimited register said it held the CPU below Desired "
        "(kind desired) or below Minimum (kind minimum) performance.\n"
        "# TYPE cppcgov_cpu_excursions_total counter\n"
        "cppcgov_cpu_excursions_total{cpu=\"3\",kind=\"desired\"} 7\n"
        "cppcgov_cpu_excursions_total{cpu=\"3\",kind=\"minimum\"} 2\n"
        "# HELP cppcgov_cpu_degraded 1 while an access to the CPU's hardware "
        "failed or has not returned within its deadline, or a firmware check "
        "finds its domain wrong (cppcgov_firmware_finding), else 0.\n"
        "# TYPE cppcgov_cpu_degraded gauge\n"
        "cppcgov_cpu_degraded{cpu=\"3\"} 1\n"
        "# HELP cppcgov_domain_cpus The CPUs of the domain (the CPUs that "
        "decide together).\n"
        "# TYPE cppcgov_domain_cpus gauge\n"
        "cppcgov_domain_cpus{domain=\"7\"} 1\n"
        "# HELP cppcgov_domain_requested_perf Performance requested for the "
        "domain, in abstract units.\n"
        "# TYPE cppcgov_domain_requested_perf gauge\n"
        "cppcgov_domain_requested_perf{domain=\"7\"} 600\n"
        "# HELP cppcgov_firmware_finding 1 while a firmware check finds a CPU "
        "of the domain wrong (check: reference-perf, counter-rate, "
        "counters-stuck, follow), else 0.\n"
        "# TYPE cppcgov_firmware_finding gauge\n"
        "cppcgov_firmware_finding{domain=\"7\",check=\"reference-perf\"} 0\n"
        "cppcgov_firmware_finding{domain=\"7\",check=\"counter-rate\"} 1\n"
        "cppcgov_firmware_finding{domain=\"7\",check=\"follow\"} 0\n"
        "cppcgov_firmware_finding{domain=\"7\",check=\"counters-stuck\"} 0\n"
        "# HELP cppcgov_hints Live hints (handles) by kind.\n"
        "# TYPE cppcgov_hints gauge\n"
        "cppcgov_hints{kind=\"clamp\"} 2\n"
        "cppcgov_hints{kind=\"latency\"} 1\n"
        "cppcgov_hints{kind=\"energy\"} 3\n"
        "# HELP cppcgov_tick_lateness_seconds How late each tick ran after "
        "its deadline.\n"
        "# TYPE cppcgov_tick_lateness_seconds histogram\n"
        "cppcgov_tick_lateness_seconds_bucket{le=\"0.001\"} 4\n"
        "cppcgov_tick_lateness_seconds_bucket{le=\"+Inf\"} 5\n"
        "cppcgov_tick_lateness_seconds_sum 0.0125\n"
        "cppcgov_tick_lateness_seconds_count 5\n"
        "# HELP cppcgov_hint_to_write_seconds From a clamp call's arrival to "
        "the tick that made the first write it caused.\n"
        "# TYPE cppcgov_hint_to_write_seconds histogram\n"
        "cppcgov_hint_to_write_seconds_bucket{le=\"0.5\"} 0\n"
        "cppcgov_hint_to_write_seconds_bucket{le=\"+Inf\"} 0\n"
        "cppcgov_hint_to_write_seconds_sum 0\n"
        "cppcgov_hint_to_write_seconds_count 0\n"
        "# HELP cppcgov_ticks_total Ticks run.\n"
        "# TYPE cppcgov_ticks_total counter\n"
        "cppcgov_ticks_total 100\n"
        "# HELP cppcgov_ticks_skipped_total Tick deadlines missed by a whole "
        "sampling period.\n"
        "# TYPE cppcgov_ticks_skipped_total counter\n"
        "cppcgov_ticks_skipped_total 5\n"
        "# HELP cppcgov_writes_total Performance requests written.\n"
        "# TYPE cppcgov_writes_total counter\n"
        "cppcgov_writes_total 40\n"
        "# HELP cppcgov_write_errors_total Ticks whose writes of performance "
        "requests failed.\n"
        "# TYPE cppcgov_write_errors_total counter\n"
        "cppcgov_write_errors_total 1\n"
        "# HELP cppcgov_access_errors_total Accesses to the hardware that "
        "failed.\n"
        "# TYPE cppcgov_access_errors_total counter\n"
        "cppcgov_access_errors_total 2\n"
        "# HELP cppcgov_process_cpu_seconds_total CPU time cppcgovd used, "
        "user and system, in seconds.\n"
        "# TYPE cppcgov_process_cpu_seconds_total counter\n"
        "cppcgov_process_cpu_seconds_total 1.5\n"
        "# HELP cppcgov_process_resident_memory_bytes cppcgovd's resident "
        "memory, in bytes.\n"
        "# TYPE cppcgov_process_resident_memory_bytes gauge\n"
        "cppcgov_process_resident_memory_bytes 4096\n";
    EXPECT_EQ(renderMetrics(oneCpu()), expected);
}

TEST(Metrics, NoCpusNoSeriesButEveryFamily)
{
    MetricsSnapshot s = oneCpu();
    s.cpus.clear();
    const std::string text = renderMetrics(s);
    EXPECT_NE(text.find("# TYPE cppcgov_cpu_requested_perf gauge\n"),
              std::string::npos);
    EXPECT_EQ(text.find("cpu=\""), std::string::npos);
}

TEST(PrometheusText, EscapesLabelValuesAndHelp)
{
    PrometheusText out;
    out.family("x", "a \\ b\nc \"d\"", PrometheusText::Type::gauge);
    const std::array<Label, 1> labels = {Label{"v", "a\\b\"c\nd"}};
    out.sample("x", labels, 2.0);
    EXPECT_EQ(out.text(), "# HELP x a \\\\ b\\nc \"d\"\n"
                          "# TYPE x gauge\n"
                          "x{v=\"a\\\\b\\\"c\\nd\"} 2\n");
}

TEST(PrometheusText, WritesNumbersExactly)
{
    EXPECT_EQ(prometheusNumber(0.1), "0.1");
    EXPECT_EQ(prometheusNumber(1e-05), "1e-05");
    EXPECT_EQ(prometheusNumber(18446744073709551615.0), "18446744073709551616");
    EXPECT_EQ(prometheusNumber(std::numeric_limits<double>::infinity()),
              "+Inf");
    EXPECT_EQ(prometheusNumber(-std::numeric_limits<double>::infinity()),
              "-Inf");
    EXPECT_EQ(prometheusNumber(std::nan("")), "NaN");
    PrometheusText out;
    out.sample("n", {}, std::uint64_t{18446744073709551615U});
    EXPECT_EQ(out.text(), "n 18446744073709551615\n");
}

TEST(PrometheusText, HistogramLabelsKeepTheirsBeforeLe)
{
    PrometheusText out;
    const std::array<Label, 1> labels = {Label{"cpu", "1"}};
    out.histogram("h", labels, {{1, 2}, {1, 3}, 4, 7.5});
    EXPECT_EQ(out.text(), "h_bucket{cpu=\"1\",le=\"1\"} 1\n"
                          "h_bucket{cpu=\"1\",le=\"2\"} 3\n"
                          "h_bucket{cpu=\"1\",le=\"+Inf\"} 4\n"
                          "h_sum{cpu=\"1\"} 7.5\n"
                          "h_count{cpu=\"1\"} 4\n");
}

TEST(LatencyHistogram, CountsCumulativelyWithInclusiveBounds)
{
    LatencyHistogram h({1000, 2000});
    h.add(0);
    h.add(1000); // le is inclusive
    h.add(1001);
    h.add(5000); // only in +Inf
    const HistogramValues v = h.values();
    ASSERT_EQ(v.bounds.size(), 2U);
    EXPECT_DOUBLE_EQ(v.bounds[0], 1e-6);
    EXPECT_DOUBLE_EQ(v.bounds[1], 2e-6);
    EXPECT_EQ(v.cumulative, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(v.count, 4U);
    EXPECT_DOUBLE_EQ(v.sum, 7001e-9);
}

TEST(LatencyHistogram, DaemonBucketsAscend)
{
    for (const HistogramValues& v :
         {tickLatenessHistogram().values(), hintToWriteHistogram().values()})
    {
        ASSERT_FALSE(v.bounds.empty());
        for (std::size_t i = 1; i < v.bounds.size(); ++i)
        {
            EXPECT_LT(v.bounds[i - 1], v.bounds[i]);
        }
    }
}

constexpr std::uint64_t second = 1'000'000'000;
constexpr std::uint64_t period = 1'000'000;

TEST(TickHealth, QuietWhileOnTime)
{
    TickHealth h(60 * second);
    EXPECT_FALSE(h.tick(second, period, period, 0)); // exactly one period
    EXPECT_FALSE(h.tick(2 * second, 0, period, 0));
}

TEST(TickHealth, FirstTroubleAtOnceThenOneLinePerInterval)
{
    TickHealth h(60 * second);
    const auto first = h.tick(second, 0, period, 3);
    ASSERT_TRUE(first);
    EXPECT_NE(first->find("3 deadlines skipped and 0 ticks late"),
              std::string::npos)
        << *first;
    EXPECT_NE(first->find("at most one such line every 60 s"),
              std::string::npos)
        << *first;
    // Within the minute: counted, not logged.
    EXPECT_FALSE(h.tick(2 * second, 2'500'000, period, 0));
    EXPECT_FALSE(h.tick(30 * second, 1'200'000, period, 1));
    // The minute passed: the next tick says what was counted, even a
    // quiet one.
    const auto next = h.tick(61 * second, 0, period, 0);
    ASSERT_TRUE(next);
    EXPECT_NE(next->find("1 deadline skipped and 2 ticks late by more than "
                         "the sampling period (1.0 ms), the worst 2.5 ms "
                         "late since the last such line"),
              std::string::npos)
        << *next;
    // Nothing counted since: nothing to say.
    EXPECT_FALSE(h.tick(200 * second, 0, period, 0));
}

} // namespace
} // namespace cppcgov::daemon
