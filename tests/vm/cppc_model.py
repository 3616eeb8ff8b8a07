# SPDX-License-Identifier: Apache-2.0
"""Linux 6.1's cppc_cpufreq conversions between performance levels and
kHz, modelled here from the kernel's description, independently of the
product (which has its own in lib/backend/perf_caps.cpp): the expected
value of a Desired register is computed with this, never taken from the
daemon.

In 6.1, drivers/cpufreq/cppc_cpufreq.c keeps lowest_freq and nominal_freq
in kHz (the _CPC gives MHz; the driver multiplies by 1000 when it reads
the capabilities) and, when both are non-zero, converts along the line
through (lowest_perf, lowest_freq) and (nominal_perf, nominal_freq) in
unsigned 64-bit integer arithmetic, each division truncating:

  perf -> kHz: mul = nominal_freq - lowest_freq
               div = nominal_perf - lowest_perf
               offset = nominal_freq - nominal_perf * mul / div
               kHz = offset + perf * mul / div      (0 when negative)
  kHz -> perf: mul = nominal_perf - lowest_perf
               div = nominal_freq - lowest_freq
               offset = nominal_perf - nominal_freq * mul / div
               perf = offset + kHz * mul / div      (0 when negative)

A userspace-governor write of F kHz to scaling_setspeed reaches the
driver as F clamped into [scaling_min_freq, scaling_max_freq], and the
driver writes khz_to_perf(F) to Desired (skipping the write when that
equals the level it last wrote). The layouts of this suite always give
both frequencies, so the DMI fallback of the kernel is not modelled.
"""


class Caps:
    """One CPU's capabilities as its acpi_cppc directory shows them."""

    def __init__(self, highest, nominal, lowest_nonlinear, lowest,
                 lowest_mhz, nominal_mhz, reference=None):
        self.highest = highest
        self.nominal = nominal
        self.lowest_nonlinear = lowest_nonlinear
        self.lowest = lowest
        self.lowest_khz = lowest_mhz * 1000
        self.nominal_khz = nominal_mhz * 1000
        self.reference = reference
        if not (lowest_mhz and nominal_mhz):
            raise ValueError('the model needs lowest_freq and nominal_freq')

    @classmethod
    def from_sysfs(cls, values):
        """`values`: {attribute name: int} of cpuN/acpi_cppc."""
        return cls(values['highest_perf'], values['nominal_perf'],
                   values['lowest_nonlinear_perf'], values['lowest_perf'],
                   values['lowest_freq'], values['nominal_freq'],
                   values.get('reference_perf'))


def _kernel_line(value, from_low, from_nominal, to_low, to_nominal):
    """Both conversions: the line through (from_low, to_low) and
    (from_nominal, to_nominal), as offset + value * mul / div with the
    kernel's unsigned operands (non-negative here, so // truncates like
    div64_u64), 0 when negative."""
    mul = to_nominal - to_low
    div = from_nominal - from_low
    offset = to_nominal - from_nominal * mul // div
    return max(offset + value * mul // div, 0)


def perf_to_khz(caps, perf):
    return _kernel_line(perf, caps.lowest, caps.nominal, caps.lowest_khz,
                        caps.nominal_khz)


def khz_to_perf(caps, khz):
    return _kernel_line(khz, caps.lowest_khz, caps.nominal_khz, caps.lowest,
                        caps.nominal)


def policy_limits(caps):
    """(scaling_min_freq, scaling_max_freq) that cppc_cpufreq sets on a
    new policy without boost: the kHz of lowest nonlinear and of nominal
    performance."""
    return perf_to_khz(caps, caps.lowest_nonlinear), \
        perf_to_khz(caps, caps.nominal)


def desired_for_request(caps, khz, min_khz, max_khz):
    """The Desired level the driver writes when the userspace governor is
    asked for `khz` under the limits [min_khz, max_khz]."""
    return khz_to_perf(caps, min(max(khz, min_khz), max_khz))


def best_request(caps, perf, min_khz, max_khz):
    """The Desired level the best possible scaling_setspeed write reaches
    for `perf` under the limits: the smallest kHz that the kernel turns
    into at least `perf`, clamped into the limits. Found by search over
    the limits, not by inverting the formula."""
    low, high = min_khz, max_khz
    if khz_to_perf(caps, high) < perf:
        return khz_to_perf(caps, high)
    while low < high:
        middle = (low + high) // 2
        if khz_to_perf(caps, middle) >= perf:
            high = middle
        else:
            low = middle + 1
    return khz_to_perf(caps, low)
