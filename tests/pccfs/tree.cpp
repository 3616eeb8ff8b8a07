// SPDX-License-Identifier: Apache-2.0
#include "tree.hpp"

#include <utility>

namespace pccfs
{
namespace
{

Node makeNode(Node::Kind kind, unsigned mode)
{
    Node n;
    n.kind = kind;
    n.mode = mode;
    return n;
}

} // namespace

bool isPccRead(Role role) noexcept
{
    return role <= Role::wraparoundTime || role == Role::scalingCurFreq ||
           role == Role::cpuinfoCurFreq;
}

bool isPccWrite(Role role) noexcept
{
    return role == Role::setspeed || role == Role::scalingMinFreq ||
           role == Role::scalingMaxFreq;
}

bool isPolicyRole(Role role) noexcept
{
    return role >= Role::affectedCpus && role <= Role::cpuinfoCurFreq;
}

Tree::Tree(unsigned cpus, unsigned cpusPerPolicy)
{
    nodes_.push_back(makeNode(Node::Kind::directory, 0755));
    const std::uint64_t cpuDir =
        directory(directory(directory(1, "devices"), "system"), "cpu");
    const std::uint64_t cpufreq = directory(cpuDir, "cpufreq");
    for (unsigned cpu = 0; cpu < cpus; ++cpu)
    {
        const std::uint64_t dir =
            directory(cpuDir, "cpu" + std::to_string(cpu));
        const std::uint64_t cppc = directory(dir, "acpi_cppc");
        for (const auto& [name, role] :
             {std::pair{"highest_perf", Role::highestPerf},
              {"nominal_perf", Role::nominalPerf},
              {"lowest_nonlinear_perf", Role::lowestNonlinearPerf},
              {"lowest_perf", Role::lowestPerf},
              {"guaranteed_perf", Role::guaranteedPerf},
              {"reference_perf", Role::referencePerf},
              {"lowest_freq", Role::lowestFreq},
              {"nominal_freq", Role::nominalFreq},
              {"feedback_ctrs", Role::feedbackCtrs},
              {"wraparound_time", Role::wraparoundTime}})
        {
            file(cppc, name, 0444, role, cpu);
        }
        file(directory(dir, "power"), "pm_qos_resume_latency_us", 0644,
             Role::resumeLatency, cpu);
        const unsigned policy = cpu - cpu % cpusPerPolicy;
        Node link = makeNode(Node::Kind::link, 0777);
        link.target = "../cpufreq/policy" + std::to_string(policy);
        add(dir, "cpufreq", std::move(link));
    }
    for (unsigned policy = 0; policy < cpus; policy += cpusPerPolicy)
    {
        const std::uint64_t dir =
            directory(cpufreq, "policy" + std::to_string(policy));
        for (const auto& [name, mode, role] :
             {std::tuple{"affected_cpus", 0444u, Role::affectedCpus},
              {"related_cpus", 0444u, Role::relatedCpus},
              {"scaling_driver", 0444u, Role::scalingDriver},
              {"scaling_available_governors", 0444u, Role::availableGovernors},
              {"scaling_governor", 0644u, Role::governor},
              {"scaling_setspeed", 0644u, Role::setspeed},
              {"cpuinfo_min_freq", 0444u, Role::cpuinfoMinFreq},
              {"cpuinfo_max_freq", 0444u, Role::cpuinfoMaxFreq},
              {"cpuinfo_transition_latency", 0444u, Role::transitionLatency},
              {"scaling_min_freq", 0644u, Role::scalingMinFreq},
              {"scaling_max_freq", 0644u, Role::scalingMaxFreq},
              {"scaling_cur_freq", 0444u, Role::scalingCurFreq},
              {"cpuinfo_cur_freq", 0400u, Role::cpuinfoCurFreq}})
        {
            file(dir, name, mode, role, policy);
        }
    }
    const std::uint64_t rig = directory(1, "pccfs");
    file(rig, "control", 0200, Role::control, 0);
    file(rig, "stats", 0444, Role::stats, 0);
}

const Node* Tree::node(std::uint64_t ino) const noexcept
{
    if (ino == 0 || ino > nodes_.size())
    {
        return nullptr;
    }
    return &nodes_[ino - 1];
}

std::uint64_t Tree::child(std::uint64_t parent,
                          const std::string& name) const noexcept
{
    const Node* dir = node(parent);
    if (dir == nullptr || dir->kind != Node::Kind::directory)
    {
        return 0;
    }
    const auto it = dir->children.find(name);
    return it == dir->children.end() ? 0 : it->second;
}

std::uint64_t Tree::add(std::uint64_t parent, const std::string& name,
                        Node node)
{
    node.parent = parent;
    nodes_.push_back(std::move(node));
    const std::uint64_t ino = nodes_.size();
    nodes_[parent - 1].children.emplace(name, ino);
    return ino;
}

std::uint64_t Tree::directory(std::uint64_t parent, const std::string& name)
{
    return add(parent, name, makeNode(Node::Kind::directory, 0755));
}

void Tree::file(std::uint64_t parent, const std::string& name, unsigned mode,
                Role role, unsigned index)
{
    Node n = makeNode(Node::Kind::file, mode);
    n.role = role;
    n.index = index;
    add(parent, name, std::move(n));
}

} // namespace pccfs
